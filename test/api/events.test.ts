// Events and the audit over TLS, as an operator's tools see them: a policy change recorded with who,
// before and after and no secret; a failed login; the live stream (SSE) within a second; the events
// file rotating at its size; retention pruning old rows; the stream and the audit closed to non-admins.
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pruneAudit } from '../../src/model/events/audit-store.js';
import { FileSink } from '../../src/model/events/file-sink.js';
import { ADMIN, CLIENT, MGMT, tempDataDir } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
let eventsFile: string;

const call: TlsController['call'] = (method, p, o) => c.call(method, p, o);

/** Open the SSE stream; resolves with the events received (data lines parsed) once `until` is met. */
function follow(token: string, types: string) {
  const received: any[] = [];
  let req: ReturnType<typeof https.request>;
  const opened = new Promise<number>((resolve, reject) => {
    req = https.request(`${c.base}${MGMT}/events?types=${types}`, { ca: c.running.ctx.pki.caBundlePem, agent: false, headers: { 'zt-session': token, accept: 'text/event-stream' } }, (res) => {
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (chunk: string) => {
        buf += chunk;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = block.split('\n').find((l) => l.startsWith('data: '));
          if (data) received.push(JSON.parse(data.slice(6)));
        }
      });
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
  return { opened, received, close: () => req.destroy() };
}

const SECRET_PASSWORD = 'Sup3r-secret-pw!';

beforeAll(async () => {
  eventsFile = path.join(tempDataDir(), 'events.jsonl');
  c = await startTlsController({ router: false, ctrl: false, eventsFile });
  admin = await c.login();
});
afterAll(() => c?.close());

describe('events and the audit', () => {
  let userToken: string;
  let userId: string;

  it('record a policy change with who, before and after, and never a secret', async () => {
    const user = await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'alice', type: 'User', isAdmin: false } });
    userId = user.body.data.id;
    const auth = await call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: userId, method: 'updb', username: 'alice', password: SECRET_PASSWORD } });
    expect(auth.status).toBe(201);
    const login = await call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'alice', password: SECRET_PASSWORD } });
    userToken = login.body.data.token;
    const policy = await call('POST', `${MGMT}/service-policies`, { token: admin, body: { name: 'web-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#web'] } });
    expect(policy.status).toBe(201);
    const id = policy.body.data.id;
    // The audit lists newest first: the update comes a second after the create on the controller's clock.
    c.clock.advance(1000);
    expect((await call('PATCH', `${MGMT}/service-policies/${id}`, { token: admin, body: { identityRoles: ['#staff', '#contractors'] } })).status).toBe(200);

    const audit = await call('GET', `${MGMT}/audit-events?entity=web-dial`, { token: admin });
    expect(audit.status).toBe(200);
    const [updated, created] = audit.body.data;
    expect(updated).toMatchObject({
      namespace: 'entityChange', eventType: 'updated', entityType: 'servicePolicies', entityId: id, entityName: 'web-dial',
      metadata: { author: { type: 'identity', name: 'Default Admin' }, source: { type: 'rest', auth: 'edge', method: 'PATCH' } },
      initialState: { identityRoles: ['#staff'] },
      finalState: { identityRoles: ['#staff', '#contractors'] },
    });
    expect(updated.metadata.source.apiSessionId).toBeTruthy();
    expect(created).toMatchObject({ eventType: 'created', initialState: null, finalState: { name: 'web-dial' } });
    expect((await call('GET', `${MGMT}/audit-events?entity=${id}&since=1h&types=entityChange`, { token: admin })).body.data).toHaveLength(2);

    // The password set for alice: its change is recorded, redacted, and appears nowhere in clear.
    const authChange = (await call('GET', `${MGMT}/audit-events?entity=alice&types=entityChange`, { token: admin })).body.data.find((e: any) => e.entityType === 'authenticators');
    expect(authChange.finalState.passwordHash ?? authChange.finalState.password).toBe('[redacted]');
    await c.running.ctx.events.flush();
    const everything = [
      fs.readFileSync(eventsFile, 'utf8'),
      JSON.stringify(await c.running.ctx.store.db.selectFrom('auditEvents').selectAll().execute()),
      (await call('GET', `${MGMT}/audit-events?limit=1000`, { token: admin })).text,
    ].join('\n');
    for (const secret of [SECRET_PASSWORD, admin, userToken, ADMIN.password]) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+/);
  });

  it('record a failed login with its method, address, identity and reason', async () => {
    expect((await call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'alice', password: 'wrong-password-1' } })).status).toBe(401);
    await c.running.ctx.events.flush();
    const audit = await call('GET', `${MGMT}/audit-events?types=authentication&entity=${userId}`, { token: admin });
    const failed = audit.body.data.find((e: any) => e.event_type === 'fail');
    expect(failed).toMatchObject({ namespace: 'authentication', type: 'updb', identity_id: userId, username: 'alice', success: false, remote_address: '127.0.0.1' });
    expect(failed.reason).toMatch(/INVALID_AUTH/);
    expect(JSON.stringify(audit.body)).not.toContain('wrong-password-1');
  });

  it("answer the same by an identity's name as by its id: its changes, enrollment and logins, also once it is deleted", async () => {
    const made = await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'dora', type: 'User', isAdmin: false, enrollment: { updb: 'dora-login' } } });
    const id = made.body.data.id as string;
    const token = (await call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data.enrollment.updb.token as string;
    expect((await call('POST', `${CLIENT}/enroll/updb?token=${token}`, { body: { password: 'dora-pass-1' } })).status).toBe(200);
    expect((await call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'dora-login', password: 'dora-pass-1' } })).status).toBe(200);
    expect((await call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'dora-login', password: 'not-her-pass' } })).status).toBe(401);
    await c.running.ctx.events.flush();
    const audit = async (entity: string) => (await call('GET', `${MGMT}/audit-events?entity=${entity}`, { token: admin })).body.data as any[];
    const kinds = (events: any[]) => events.map((e) => `${e.namespace} ${e.eventType ?? e.event_type}${e.entityType ? ` ${e.entityType}` : ''}`).sort();
    const byId = await audit(id);
    expect(kinds(byId)).toEqual(expect.arrayContaining(['authentication fail', 'authentication success', 'enrollment success', 'entityChange created identities']));
    expect(await audit('dora')).toEqual(byId);
    // Deleted: its name still finds everything its id does (the audit keeps names as they were).
    expect((await call('DELETE', `${MGMT}/identities/${id}`, { token: admin })).status).toBe(200);
    await c.running.ctx.events.flush();
    const deletedById = await audit(id);
    expect(kinds(deletedById)).toContain('entityChange deleted identities');
    expect(await audit('dora')).toEqual(deletedById);
  });

  it("keep a disabled identity's refused logins under its id, with the authenticator", async () => {
    const made = await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'erin', type: 'User', isAdmin: false, enrollment: { updb: 'erin-login' } } });
    const id = made.body.data.id as string;
    const token = (await call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data.enrollment.updb.token as string;
    expect((await call('POST', `${CLIENT}/enroll/updb?token=${token}`, { body: { password: 'erin-pass-1' } })).status).toBe(200);
    expect((await call('POST', `${MGMT}/identities/${id}/disable`, { token: admin, body: { durationMinutes: 0 } })).status).toBe(200);
    // The right password, refused: the answer says nothing of why, the event says whose it was.
    const refused = await call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'erin-login', password: 'erin-pass-1' } });
    expect(refused.status).toBe(401);
    expect(refused.text).not.toContain(id);
    await c.running.ctx.events.flush();
    const authenticator = (await call('GET', `${MGMT}/identities/${id}/authenticators`, { token: admin })).body.data[0].id as string;
    for (const entity of [id, 'erin']) {
      const fails = ((await call('GET', `${MGMT}/audit-events?entity=${entity}&types=authentication`, { token: admin })).body.data as any[]).filter((e) => e.event_type === 'fail');
      expect(fails).toHaveLength(1);
      expect(fails[0]).toMatchObject({ identity_id: id, authenticator_id: authenticator, type: 'updb', success: false });
    }
  });

  it('record an enrollment refused, with its method and reason and not its token', async () => {
    const bogus = 'not-a-real-enrollment-token';
    expect((await call('POST', `${CLIENT}/enroll/ott?token=${bogus}`, { body: {} })).status).toBeGreaterThanOrEqual(400);
    await c.running.ctx.events.flush();
    const audit = await call('GET', `${MGMT}/audit-events?types=enrollment`, { token: admin });
    // The only refused one (this controller's clock may stand still: the order of events in one instant is not asserted).
    const refused = (audit.body.data as any[]).filter((e) => e.event_type === 'fail');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ namespace: 'enrollment', event_type: 'fail', method: 'ott', remote_address: '127.0.0.1' });
    expect(refused[0].reason).toBeTruthy();
    expect(audit.text).not.toContain(bogus);
  });

  it('stream events to an admin within a second', async () => {
    const stream = follow(admin, 'entityChange,apiSession');
    expect(await stream.opened).toBe(200);
    const started = Date.now();
    await call('POST', `${MGMT}/services`, { token: admin, body: { name: 'streamed', encryptionRequired: true } });
    while (!stream.received.some((e) => e.entityName === 'streamed') && Date.now() - started < 1000) await new Promise((r) => setTimeout(r, 20));
    stream.close();
    expect(Date.now() - started).toBeLessThan(1000);
    const e = stream.received.find((x) => x.entityName === 'streamed');
    expect(e).toMatchObject({ namespace: 'entityChange', eventType: 'created', entityType: 'services' });
    expect(stream.received.every((x) => x.namespace === 'entityChange' || x.namespace === 'edge.apiSessions')).toBe(true);
  });

  it('are closed to non-admins, and refuse unknown types with a 400', async () => {
    expect((await call('GET', `${MGMT}/audit-events`, { token: userToken })).status).toBe(401);
    expect((await call('GET', `${MGMT}/audit-events`)).status).toBe(401);
    const stream = follow(userToken, 'entityChange');
    expect(await stream.opened).toBe(401);
    stream.close();
    expect((await call('GET', `${MGMT}/audit-events?types=nonsense`, { token: admin })).status).toBe(400);
    expect((await call('GET', `${MGMT}/audit-events?since=yesterday`, { token: admin })).status).toBe(400);
  });

  it('are kept for the retention window', async () => {
    const old = new Date(Date.now() - 100 * 86_400_000).toISOString();
    await c.running.ctx.store.db.insertInto('auditEvents').values({ id: 'old-one', at: old, namespace: 'entityChange', eventType: 'created', entityType: 'services', entityId: 'x', entityName: 'ancient', actorId: null, actorName: null, body: '{}' }).execute();
    const before = await c.running.ctx.store.db.selectFrom('auditEvents').select('id').execute();
    expect(await pruneAudit(c.running.ctx.store.db, new Date(), 90)).toBe(1);
    const after = await c.running.ctx.store.db.selectFrom('auditEvents').select('id').execute();
    expect(after.length).toBe(before.length - 1);
    expect(after.some((r) => r.id === 'old-one')).toBe(false);
  });
});

describe('the events file', () => {
  it('rotates at its size and keeps the configured number of files', async () => {
    const file = path.join(tempDataDir(), 'rot', 'events.jsonl');
    const sink = new FileSink({ file, maxBytes: 1000, keep: 2, flushMs: 10 });
    const line = JSON.stringify({ namespace: 'entityChange', pad: 'x'.repeat(80) });
    for (let i = 0; i < 40; i++) sink.write(line);
    await sink.close();
    expect(fs.statSync(file).size).toBeLessThanOrEqual(1000);
    expect(fs.statSync(`${file}.1`).size).toBeLessThanOrEqual(1000);
    expect(fs.existsSync(`${file}.2`)).toBe(true);
    expect(fs.existsSync(`${file}.3`)).toBe(false);
    for (const f of [file, `${file}.1`, `${file}.2`]) for (const l of fs.readFileSync(f, 'utf8').trim().split('\n')) expect(JSON.parse(l).namespace).toBe('entityChange');
  });
});
