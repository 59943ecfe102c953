// Writes made outside the generic crud (MFA, posture responses, API sessions ended by someone else's
// change, PKI actions, enrollment itself) are entity changes like any other: each leaves its audit row
// and its event, with who did it and without a secret; and enrollment events name whose enrollment it
// was. All through HTTPS as clients and operators call it.
import fs from 'node:fs';
import path from 'node:path';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, MGMT, tempDataDir } from '../helpers/controller.js';
import { ecCsr, TestCa } from '../helpers/certs.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
let eventsFile: string;
const PASSWORD = 'Walrus-Password-1';

beforeAll(async () => {
  eventsFile = path.join(tempDataDir(), 'events.jsonl');
  c = await startTlsController({ router: false, ctrl: false, eventsFile });
  admin = await c.login();
});
afterAll(() => c?.close());

const ok = async (r: Promise<{ status: number; body: any; text: string }>, status = 200) => {
  const res = await r;
  expect(res.status, res.text).toBe(status);
  return res.body;
};

/** The stored entity changes of one entity (by id or name), newest first. */
async function changes(entity: string) {
  return (await ok(c.call('GET', `${MGMT}/audit-events?types=entityChange&entity=${encodeURIComponent(entity)}&limit=100`, { token: admin }))).data as any[];
}

/** Every event written to the events file so far. */
async function fileEvents() {
  await c.running.ctx.events.flush();
  return fs.readFileSync(eventsFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
}

/** A user with a password, logged in. */
async function user(name: string) {
  const id = (await ok(c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'User', isAdmin: false } }), 201)).data.id;
  const auth = (await ok(c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: name, password: PASSWORD } }), 201)).data.id;
  const token = (await ok(c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: name, password: PASSWORD } }))).data.token as string;
  return { id, auth, token };
}

const code = (secret: string) => generate({ secret, epoch: Math.floor(c.clock.now().getTime() / 1000) });

describe('writes outside the generic crud', () => {
  it('MFA enrolment, verification and removal are entity changes of the mfas, by the identity, without secret or codes', async () => {
    const u = await user('mfa-walrus');
    const mfaId = (await ok(c.call('POST', `${CLIENT}/current-identity/mfa`, { token: u.token }), 201)).data.id;
    const pending = (await ok(c.call('GET', `${CLIENT}/current-identity/mfa`, { token: u.token }))).data;
    const secret = new URL(pending.provisioningUrl).searchParams.get('secret')!;
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token: u.token, body: { code: '000000' } })).status).toBe(400);
    c.clock.advance(1000);
    await ok(c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token: u.token, body: { code: await code(secret) } }));
    c.clock.advance(31_000);
    await ok(c.call('DELETE', `${CLIENT}/current-identity/mfa`, { token: u.token, headers: { 'mfa-validation-code': await code(secret) } }));

    const [deleted, verified, created] = await changes(mfaId);
    expect(deleted).toMatchObject({ eventType: 'deleted', entityType: 'mfas', metadata: { author: { id: u.id } }, finalState: null });
    expect(created).toMatchObject({
      namespace: 'entityChange', eventType: 'created', entityType: 'mfas', entityId: mfaId,
      metadata: { author: { type: 'identity', id: u.id, name: 'mfa-walrus' }, source: { type: 'rest', auth: 'edge', method: 'POST' } },
      initialState: null, finalState: { identityId: u.id, isVerified: 0, secret: '[redacted]', recoveryCodes: '[redacted]' },
    });
    // The wrong code changed nothing, so recorded nothing: one update, the verification.
    expect(verified).toMatchObject({ eventType: 'updated', action: 'verify', initialState: { isVerified: 0 }, finalState: { isVerified: 1, secret: '[redacted]' } });
    const everything = JSON.stringify(await changes(mfaId)) + JSON.stringify(await fileEvents());
    expect(everything).not.toContain(secret);
    for (const rc of pending.recoveryCodes as string[]) expect(everything).not.toContain(rc);
  });

  it('an identity\'s MFA removed by an admin is the mfas entity deleted, by the admin', async () => {
    const u = await user('mfa-seal');
    const mfaId = (await ok(c.call('POST', `${CLIENT}/current-identity/mfa`, { token: u.token }), 201)).data.id;
    c.clock.advance(1000);
    await ok(c.call('DELETE', `${MGMT}/identities/${u.id}/mfa`, { token: admin }));
    const [deleted] = await changes(mfaId);
    expect(deleted).toMatchObject({ eventType: 'deleted', entityType: 'mfas', action: 'remove-mfa', metadata: { author: { name: 'Default Admin' } }, finalState: null, initialState: { id: mfaId, secret: '[redacted]' } });
    expect((await fileEvents()).some((e) => e.namespace === 'entityChange' && e.entityId === mfaId && e.eventType === 'deleted')).toBe(true);
  });

  it('posture responses are entity changes: created, then updated from the answer they replace', async () => {
    const u = await user('posture-walrus');
    const check = (await ok(c.call('POST', `${MGMT}/posture-checks`, { token: admin, body: { name: 'walrus-domain', typeId: 'DOMAIN', domains: ['corp.example'] } }), 201)).data.id;
    await ok(c.call('POST', `${CLIENT}/posture-response`, { token: u.token, body: { id: check, typeId: 'DOMAIN', domain: 'home.example' } }), 201);
    c.clock.advance(1000);
    await ok(c.call('POST', `${CLIENT}/posture-response-bulk`, { token: u.token, body: [{ id: check, typeId: 'DOMAIN', domain: 'corp.example' }] }));
    const all = (await ok(c.call('GET', `${MGMT}/audit-events?types=entityChange&actor=${u.id}&limit=100`, { token: admin }))).data.filter((e: any) => e.entityType === 'postureResponses');
    expect(all).toHaveLength(2);
    const [updated, created] = all;
    expect(created).toMatchObject({ eventType: 'created', metadata: { author: { id: u.id } }, finalState: { identityId: u.id, checkId: check, typeId: 'DOMAIN', data: { domain: 'home.example' } } });
    expect(updated).toMatchObject({ eventType: 'updated', entityId: created.entityId, initialState: { data: { domain: 'home.example' } }, finalState: { data: { domain: 'corp.example' } } });
    // A refused batch (an unknown check) stores and records nothing.
    expect((await c.call('POST', `${CLIENT}/posture-response-bulk`, { token: u.token, body: [{ id: check, typeId: 'DOMAIN', domain: 'x.example' }, { id: 'no-such-check', typeId: 'DOMAIN', domain: 'x' }] })).status).toBe(400);
    expect((await ok(c.call('GET', `${MGMT}/audit-events?types=entityChange&actor=${u.id}&limit=100`, { token: admin }))).data.filter((e: any) => e.entityType === 'postureResponses')).toHaveLength(2);
  });

  it('API sessions ended by an admin\'s change (a password set, a delete, a disable) are recorded with who did it and why', async () => {
    const u = await user('session-walrus');
    const sessionOf = async (token: string) => (await ok(c.call('GET', `${CLIENT}/current-api-session`, { token }))).data.id as string;
    const first = await sessionOf(u.token);
    // The admin sets a new password: the sessions the old one opened end.
    await ok(c.call('PATCH', `${MGMT}/authenticators/${u.auth}`, { token: admin, body: { password: 'Another-Password-2' } }));
    expect((await c.call('GET', `${CLIENT}/current-api-session`, { token: u.token })).status).toBe(401);
    const [revoked] = await changes(first);
    expect(revoked).toMatchObject({ eventType: 'deleted', entityType: 'apiSessions', action: 'credential-changed', metadata: { author: { name: 'Default Admin' } }, initialState: { identityId: u.id, tokenHash: '[redacted]' } });

    // An admin deletes one through the API.
    const again = (await ok(c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'session-walrus', password: 'Another-Password-2' } }))).data.token;
    const second = await sessionOf(again);
    await ok(c.call('DELETE', `${MGMT}/api-sessions/${second}`, { token: admin }));
    expect((await changes(second))[0]).toMatchObject({ eventType: 'deleted', entityType: 'apiSessions' });

    // Disabling the identity ends the rest.
    const third = await sessionOf((await ok(c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'session-walrus', password: 'Another-Password-2' } }))).data.token);
    await ok(c.call('POST', `${MGMT}/identities/${u.id}/disable`, { token: admin, body: { durationMinutes: 0 } }));
    expect((await changes(third))[0]).toMatchObject({ eventType: 'deleted', entityType: 'apiSessions', action: 'identity-disabled' });

    const ended = (await fileEvents()).filter((e) => e.namespace === 'edge.apiSessions' && e.event_type === 'deleted');
    expect(ended.find((e) => e.id === first)).toMatchObject({ identity_id: u.id, reason: 'credential-changed' });
    expect(ended.find((e) => e.id === second)).toMatchObject({ reason: 'deleted' });
    expect(ended.find((e) => e.id === third)).toMatchObject({ reason: 'identity-disabled' });
    const text = JSON.stringify(ended) + JSON.stringify(await changes(u.id));
    for (const t of [u.token, again]) expect(text).not.toContain(t);
  });

  it('PKI routes record their changes: enrollment refresh, authenticator re-enrollment, CA verification', async () => {
    const id = (await ok(c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'pki-walrus', type: 'Device', isAdmin: false, enrollment: { ott: true } } }), 201)).data.id;
    const enrollment = (await ok(c.call('GET', `${MGMT}/identities/${id}/enrollments`, { token: admin }))).data[0];
    c.clock.advance(1000);
    const expiresAt = new Date(c.clock.now().getTime() + 7_200_000).toISOString();
    await ok(c.call('POST', `${MGMT}/enrollments/${enrollment.id}/refresh`, { token: admin, body: { expiresAt } }));
    const [refreshed, created] = await changes(enrollment.id);
    expect(created).toMatchObject({ eventType: 'created', entityType: 'enrollments', finalState: { identityId: id, method: 'ott', jwt: '[redacted]', tokenHash: '[redacted]' } });
    expect(refreshed).toMatchObject({ eventType: 'updated', action: 'refresh', metadata: { author: { name: 'Default Admin' } }, finalState: { expiresAt, jwt: '[redacted]' } });
    expect(JSON.stringify([refreshed, created])).not.toContain(enrollment.token);

    // Enrolled, then re-enrolled by the admin: the authenticator goes, an enrollment comes.
    c.clock.advance(1000);
    const cert = await ok(c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: enrollment.token, clientCsr: ecCsr('pki-walrus').csrPem } }));
    expect(cert.data.cert).toBeTruthy();
    const enrolled = await changes(enrollment.id);
    expect(enrolled[0]).toMatchObject({ eventType: 'deleted', action: 'enroll', metadata: { author: { type: 'controller' } } });
    const authenticator = (await ok(c.call('GET', `${MGMT}/identities/${id}/authenticators`, { token: admin }))).data[0].id;
    expect((await changes(authenticator))[0]).toMatchObject({ eventType: 'created', entityType: 'authenticators', action: 'enroll', finalState: { identityId: id, method: 'cert' } });
    c.clock.advance(1000);
    const re = await ok(c.call('POST', `${MGMT}/authenticators/${authenticator}/re-enroll`, { token: admin, body: { expiresAt } }), 201);
    expect((await changes(authenticator))[0]).toMatchObject({ eventType: 'deleted', action: 're-enroll', metadata: { author: { name: 'Default Admin' } } });
    expect((await changes(re.data.id))[0]).toMatchObject({ eventType: 'created', entityType: 'enrollments', finalState: { identityId: id } });

    // A third-party CA verified.
    const ca = new TestCa('Walrus Corp CA');
    const caId = (await ok(c.call('POST', `${MGMT}/cas`, { token: admin, body: { name: ca.name, certPem: ca.pem, identityRoles: [], identityNameFormat: '[caName]-[commonName]', isAuthEnabled: true, isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: true } }), 201)).data.id;
    const token = (await ok(c.call('GET', `${MGMT}/cas/${caId}`, { token: admin }))).data.verificationToken;
    c.clock.advance(1000);
    await ok(c.call('POST', `${MGMT}/cas/${caId}/verify`, { token: admin, body: ca.issue(token).certPem, contentType: 'text/plain' }));
    expect((await changes(caId))[0]).toMatchObject({ eventType: 'updated', entityType: 'cas', action: 'verify', initialState: { isVerified: 0 }, finalState: { isVerified: 1 } });
  });
});

describe('enrollment events', () => {
  it('name the identity whose enrollment it was, on success and on a refusal after the token named it', async () => {
    const id = (await ok(c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'enrolling-walrus', type: 'Device', isAdmin: false, enrollment: { ott: true } } }), 201)).data.id;
    const { token } = (await ok(c.call('GET', `${MGMT}/identities/${id}/enrollments`, { token: admin }))).data[0];
    expect((await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: 'not a csr' } })).status).toBe(400);
    await ok(c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: ecCsr('enrolling-walrus').csrPem } }));
    expect((await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: 'no-such-token', clientCsr: ecCsr().csrPem } })).status).toBe(400);
    await c.running.ctx.events.flush();
    const mine = (await ok(c.call('GET', `${MGMT}/audit-events?types=enrollment&entity=${id}`, { token: admin }))).data;
    expect(mine.map((e: any) => e.event_type).sort()).toEqual(['fail', 'success']);
    for (const e of mine) expect(e).toMatchObject({ namespace: 'enrollment', method: 'ott', identity_id: id, remote_address: '127.0.0.1' });
    const unknown = (await fileEvents()).filter((e) => e.namespace === 'enrollment' && e.reason.includes('unknown'));
    expect(unknown.at(-1)).toMatchObject({ event_type: 'fail', identity_id: '' });
    expect(JSON.stringify(mine)).not.toContain(token);
  });
});
