// API tokens over TLS, as a CI job or Prometheus uses them: created once and shown once, stored as a
// hash, sent as `Authorization: Bearer` or `zt-session`, scoped (admin or read-only), with expiry and
// last use, revoked by deleting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/model/ids.js';
import { MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;

const call: TlsController['call'] = (method, path, o) => c.call(method, path, o);

beforeAll(async () => {
  c = await startTlsController({ router: false, ctrl: false });
  admin = await c.login();
});
afterAll(() => c?.close());

describe('API tokens', () => {
  let token: string;
  let id: string;

  it('are shown once at creation and kept only as a hash', async () => {
    const made = await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'ci-deploy', expiresInDays: 30 } });
    expect(made.status).toBe(201);
    token = made.body.data.token;
    id = made.body.data.id;
    expect(token).toMatch(/^ztt_[A-Za-z0-9_-]{40,}$/);
    expect(made.body.data).toMatchObject({ name: 'ci-deploy', readOnly: false });
    expect(Date.parse(made.body.data.expiresAt) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const detail = await call('GET', `${MGMT}/api-tokens/${id}`, { token: admin });
    expect(detail.body.data).toMatchObject({ name: 'ci-deploy', identity: { name: 'Default Admin' }, readOnly: false, lastUsedAt: null });
    expect(detail.text).not.toContain(token);
    expect((await call('GET', `${MGMT}/api-tokens`, { token: admin })).text).not.toContain(token);
    const row = await c.running.ctx.store.db.selectFrom('apiTokens').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.tokenHash).toBe(hashSecret(token));
    expect(JSON.stringify(row)).not.toContain(token);
  });

  it('act as their admin through Authorization: Bearer and zt-session, and record their last use', async () => {
    const made = await call('POST', `${MGMT}/services`, { bearer: token, body: { name: 'from-ci', encryptionRequired: true } });
    expect(made.status).toBe(201);
    expect((await call('GET', `${MGMT}/services/${made.body.data.id}`, { token })).status).toBe(200);
    expect((await call('GET', '/metrics', { bearer: token })).status).toBe(200);
    const detail = await call('GET', `${MGMT}/api-tokens/${id}`, { token: admin });
    expect(Date.now() - Date.parse(detail.body.data.lastUsedAt)).toBeLessThan(60_000);
  });

  it('can be read-only: reads answer, changes are 403', async () => {
    const ro = (await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'scraper', readOnly: true } })).body.data.token as string;
    expect((await call('GET', `${MGMT}/identities`, { bearer: ro })).status).toBe(200);
    const refused = await call('POST', `${MGMT}/services`, { bearer: ro, body: { name: 'nope', encryptionRequired: true } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('UNAUTHORIZED');
    // Says that the token (not its admin identity) is what reads only, and what to use instead.
    expect(refused.body.error.message).toMatch(/API token is read-only, which may only read; make the change with an admin's API token created without --read-only/);
  });

  it('are for admins only, and refuse bad input without a 500', async () => {
    const user = (await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'plain-user', type: 'User', isAdmin: false } })).body.data.id;
    const r = await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'for-user', identityId: user } });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/tokens are for admins/);
    expect((await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'ci-deploy' } })).status).toBe(400);
    expect((await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'x', expiresInDays: 0 } })).status).toBe(400);
    expect((await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'x', identityId: 'no-such' } })).status).toBe(400);
    expect((await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'x', token: 'chosen' } })).status).toBe(400);
    expect((await call('GET', `${MGMT}/identities`, { bearer: 'ztt_not-a-token' })).status).toBe(401);
  });

  it('stop working when they expire, when revoked, and when their identity is disabled', async () => {
    const short = (await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'short', expiresInDays: 1 } })).body.data;
    await c.running.ctx.store.db.updateTable('apiTokens').set({ expiresAt: '2000-01-01T00:00:00.000Z' }).where('id', '=', short.id).execute();
    const expired = await call('GET', `${MGMT}/identities`, { bearer: short.token });
    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toMatch(/expired/);

    expect((await call('DELETE', `${MGMT}/api-tokens/${id}`, { token: admin })).status).toBe(200);
    expect((await call('GET', `${MGMT}/identities`, { bearer: token })).status).toBe(401);

    // A second admin's token goes down with the admin's disabling.
    const other = (await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'ops-admin', type: 'User', isAdmin: true } })).body.data.id;
    const theirs = (await call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'ops', identityId: other } })).body.data.token;
    expect((await call('GET', `${MGMT}/identities`, { bearer: theirs })).status).toBe(200);
    expect((await call('POST', `${MGMT}/identities/${other}/disable`, { token: admin, body: { durationMinutes: 0 } })).status).toBe(200);
    expect((await call('GET', `${MGMT}/identities`, { bearer: theirs })).status).toBe(401);
  });
});
