// Several controllers on one PostgreSQL database (runs when ZTC_TEST_DB names a server).
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/server/app.js';
import { openDataDir, type Opened } from '../../src/server/controller.js';
import { registerController } from '../../src/model/resources/controllers.js';
import { ecCsr } from '../helpers/certs.js';
import { ADMIN, CLIENT, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const onPostgres = !!process.env.ZTC_TEST_DB;

describe.skipIf(!onPostgres)('two controllers on one PostgreSQL database', () => {
  const nodes: { app: App; opened: Opened }[] = [];
  beforeAll(async () => {
    const db = await testDatabase();
    // Started together: migrations and first-start rows must be safe when raced.
    const opened = await Promise.all([0, 1].map(() => openDataDir(testConfig(tempDataDir(), { db }))));
    for (const o of opened) nodes.push({ opened: o, app: await buildApp(o.ctx) });
  });
  afterAll(async () => {
    for (const n of nodes) {
      await n.app.close();
      await n.opened.close();
    }
  });

  const call = async (n: number, method: string, url: string, token?: string, body?: unknown) => {
    const r = await nodes[n].app.inject({ method: method as 'GET', url, headers: { ...(token ? { 'zt-session': token } : {}), ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { payload: JSON.stringify(body) } : {}) });
    return { status: r.statusCode, body: JSON.parse(r.body || '{}') };
  };

  it('runs on PostgreSQL, with one default admin after a raced first start', async () => {
    expect(nodes[0].opened.ctx.store.dialect.name).toBe('postgres');
    expect(nodes.filter((n) => n.opened.boot.adminCreated)).toHaveLength(1);
    const admins = await nodes[0].opened.ctx.store.db.selectFrom('identities').select('id').where('isDefaultAdmin', '=', 1).execute();
    expect(admins).toHaveLength(1);
  });

  it('sees a change made through one controller at once through the other, with shared sessions', async () => {
    const login = await call(0, 'POST', `${CLIENT}/authenticate?method=password`, undefined, ADMIN);
    const token = login.body.data.token;
    // The session opened on controller 0 works on controller 1.
    expect((await call(1, 'GET', `${CLIENT}/current-api-session`, token)).status).toBe(200);
    const made = await call(0, 'POST', `${MGMT}/identities`, token, { name: 'seen-everywhere', type: 'User', isAdmin: false, tags: { site: 'a' }, roleAttributes: ['x'] });
    expect(made.status).toBe(201);
    const got = await call(1, 'GET', `${MGMT}/identities/${made.body.data.id}`, token);
    expect(got.body.data).toMatchObject({ name: 'seen-everywhere', tags: { site: 'a' } });
    expect((await call(1, 'GET', `${MGMT}/identities?filter=${encodeURIComponent('tags.site = "a" and anyOf(roleAttributes) = "x"')}`, token)).body.data).toHaveLength(1);
    // Logging out on controller 1 ends the session on controller 0 too.
    expect((await call(1, 'DELETE', `${CLIENT}/current-api-session`, token)).status).toBe(200);
    expect((await call(0, 'GET', `${CLIENT}/current-api-session`, token)).status).toBe(401);
  });

  it('lets exactly one of two racing creates of one name win', async () => {
    const token = (await call(0, 'POST', `${CLIENT}/authenticate?method=password`, undefined, ADMIN)).body.data.token;
    for (let round = 0; round < 10; round++) {
      const name = `race-${round}`;
      const results = await Promise.all([0, 1, 0, 1].map((n) => call(n, 'POST', `${MGMT}/identities`, token, { name, type: 'User', isAdmin: false })));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([201, 400, 400, 400]);
      for (const r of results.filter((x) => x.status === 400)) expect(r.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name' } });
      const rows = await nodes[0].opened.ctx.store.db.selectFrom('identities').select('id').where('name', '=', name).execute();
      expect(rows).toHaveLength(1);
    }
  });

  it('accepts a one-time enrollment token raced through both controllers exactly once', async () => {
    const token = (await call(0, 'POST', `${CLIENT}/authenticate?method=password`, undefined, ADMIN)).body.data.token;
    for (let round = 0; round < 8; round++) {
      const id = (await call(0, 'POST', `${MGMT}/identities`, token, { name: `ott-race-${round}`, type: 'Device', isAdmin: false, enrollment: { ott: true } })).body.data.id;
      const ott = (await call(1, 'GET', `${MGMT}/identities/${id}`, token)).body.data.enrollment.ott.token;
      const results = await Promise.all([0, 1, 0, 1].map((n) => call(n, 'POST', `${CLIENT}/enroll/ott`, undefined, { token: ott, clientCsr: ecCsr(`r${round}`).csrPem })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      for (const r of results.filter((x) => x.status !== 200)) expect([400, 409]).toContain(r.status); // a used token is unknown: 400 INVALID_ENROLLMENT_TOKEN, as upstream
      const certs = await nodes[0].opened.ctx.store.db.selectFrom('authenticators').select('id').where('identityId', '=', id).execute();
      expect(certs).toHaveLength(1);
    }
  });

  it('keeps an entity and its indexes consistent under concurrent changes from both controllers', async () => {
    const token = (await call(0, 'POST', `${CLIENT}/authenticate?method=password`, undefined, ADMIN)).body.data.token;
    const id = (await call(0, 'POST', `${MGMT}/identities`, token, { name: 'contended', type: 'User', isAdmin: false })).body.data.id;
    const writes = Array.from({ length: 20 }, (_, i) => call(i % 2, 'PATCH', `${MGMT}/identities/${id}`, token, { roleAttributes: [`r${i}`, 'common'], tags: { writer: String(i) } }));
    const results = await Promise.all(writes);
    expect(results.every((r) => r.status === 200)).toBe(true);
    const final = (await call(1, 'GET', `${MGMT}/identities/${id}`, token)).body.data;
    // Whichever write came last, the row and its index rows agree.
    const db = nodes[0].opened.ctx.store.db;
    const attrs = (await db.selectFrom('entityRoleAttributes').select('attribute').where('entityId', '=', id).execute()).map((r) => r.attribute).sort();
    const tags = await db.selectFrom('entityTags').select(['tagKey', 'value']).where('entityId', '=', id).execute();
    expect(attrs).toEqual([...final.roleAttributes].sort());
    expect(tags).toEqual([{ tagKey: 'writer', value: final.tags.writer }]);
  });

  it('keeps policy membership right when policies and entities are created at once through both controllers', async () => {
    const token = (await call(0, 'POST', `${CLIENT}/authenticate?method=password`, undefined, ADMIN)).body.data.token;
    const writes = [
      ...Array.from({ length: 12 }, (_, i) => call(i % 2, 'POST', `${MGMT}/identities`, token, { name: `race-id-${i}`, type: 'User', isAdmin: false, roleAttributes: ['race'] })),
      ...Array.from({ length: 6 }, (_, i) => call((i + 1) % 2, 'POST', `${MGMT}/service-policies`, token, { name: `race-sp-${i}`, type: 'Dial', semantic: 'AnyOf', identityRoles: ['#race'], serviceRoles: ['#all'] })),
    ];
    const results = await Promise.all(writes);
    expect(results.every((r) => r.status === 201)).toBe(true);
    // Every policy selects every identity, whichever controller and order wrote them.
    const policies = results.slice(12).map((r) => r.body.data.id);
    for (const p of policies) {
      const members = (await call(1, 'GET', `${MGMT}/service-policies/${p}/identities?limit=100`, token)).body.data.map((x: { name: string }) => x.name);
      expect(members.filter((n: string) => n.startsWith('race-id-')).length).toBe(12);
    }
    expect((await call(0, 'POST', `${MGMT}/database/check-data-integrity`, token)).status).toBe(202);
    let state;
    for (let i = 0; i < 200; i++) {
      state = (await call(1, 'GET', `${MGMT}/database/data-integrity-results`, token)).body.data;
      if (!state.inProgress) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(state.results).toEqual([]);
  });
});

describe.skipIf(!onPostgres)('enrollment JWTs of several controllers', () => {
  it('a controller re-signs its own outstanding JWTs after a new server certificate, never another controller\'s', async () => {
    const db = await testDatabase();
    const [dirA, dirB] = [tempDataDir(), tempDataDir()];
    const open = async (dir: string, host: string) => {
      const opened = await openDataDir(testConfig(dir, { db, hostnames: [host], port: 1280 }));
      const stop = await registerController(opened.ctx);
      return { opened, app: await buildApp(opened.ctx), stop };
    };
    const enroll = async (node: Awaited<ReturnType<typeof open>>, name: string) => {
      const token = JSON.parse((await node.app.inject({ method: 'POST', url: `${CLIENT}/authenticate?method=password`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(ADMIN) })).body).data.token;
      const made = await node.app.inject({ method: 'POST', url: `${MGMT}/identities`, headers: { 'zt-session': token, 'content-type': 'application/json' }, payload: JSON.stringify({ name, type: 'Default', isAdmin: false, enrollment: { ott: true } }) });
      return JSON.parse(made.body).data.id as string;
    };
    const jwtOf = async (identityId: string, o: Opened) => {
      const row = await o.ctx.store.db.selectFrom('enrollments').select('jwt').where('identityId', '=', identityId).executeTakeFirstOrThrow();
      return o.ctx.sealer.open(row.jwt);
    };
    const close = async (n: Awaited<ReturnType<typeof open>>) => {
      await n.stop();
      await n.app.close();
      await n.opened.close();
    };
    let a = await open(dirA, 'ctrl-a.test');
    const b = await open(dirB, 'ctrl-b.test');
    const [ofA, ofB] = [await enroll(a, 'enrolls-at-a'), await enroll(b, 'enrolls-at-b')];
    const [jwtA, jwtB] = [await jwtOf(ofA, a.opened), await jwtOf(ofB, b.opened)];
    expect(decodeJwt(jwtA).iss).toBe('https://ctrl-a.test:1280');
    expect(decodeJwt(jwtB).iss).toBe('https://ctrl-b.test:1280');
    // A starts again under a new name: a new server certificate, so a new signing key.
    await close(a);
    a = await open(dirA, 'ctrl-a2.test');
    const [afterA, afterB] = [await jwtOf(ofA, a.opened), await jwtOf(ofB, a.opened)];
    expect(decodeProtectedHeader(afterA).kid).toBe(a.opened.ctx.pki.signingJwk.kid);
    expect(decodeProtectedHeader(afterA).kid).not.toBe(decodeProtectedHeader(jwtA).kid);
    // B's JWT is checked against B's certificate: left as B signed it.
    expect(afterB).toBe(jwtB);
    await close(a);
    await close(b);
  });
});
