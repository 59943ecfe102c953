import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
beforeAll(async () => {
  c = await startTestController();
});
afterAll(() => c.close());

describe('password authentication and API sessions', () => {
  it('runs the whole login flow on both APIs', async () => {
    for (const api of [CLIENT, MGMT]) {
      const auth = await c.call('POST', `${api}/authenticate?method=password`, { body: { ...ADMIN, configTypes: ['intercept.v1'], envInfo: { os: 'linux' }, sdkInfo: { type: 'test' } } });
      expect(auth.status).toBe(200);
      const s = auth.body.data;
      expect(s.token).toMatch(/^[\w-]{40,}$/);
      expect(auth.headers['zt-session']).toBe(s.token);
      expect(s.isMfaRequired).toBe(false);
      expect(s.isMfaComplete).toBe(false);
      expect(s.configTypes).toEqual(['intercept.v1']);
      expect(s.identity.name).toBe('Default Admin');
      expect(s.expirationSeconds).toBe(30 * 60);
      expect(Date.parse(s.expiresAt) - Date.parse(s.lastActivityAt)).toBe(30 * 60_000);

      const cur = await c.call('GET', `${api}/current-api-session`, { token: s.token });
      expect(cur.status).toBe(200);
      expect(cur.body.data.id).toBe(s.id);
      expect(cur.body.data.token).toBe(s.token);

      const me = await c.call('GET', `${api}/current-identity`, { token: s.token });
      expect(me.status).toBe(200);
      expect(me.body.data).toMatchObject({ name: 'Default Admin', isAdmin: true, isDefaultAdmin: true, typeId: 'Default', authPolicyId: 'default', hasApiSession: true });
      expect(me.body.data.authenticators.updb.username).toBe('admin');
      expect(me.body.data.envInfo).toEqual({ os: 'linux' });

      const out = await c.call('DELETE', `${api}/current-api-session`, { token: s.token });
      expect(out.status).toBe(200);
      expect(out.body.data).toEqual({});
      expectError(await c.call('GET', `${api}/current-identity`, { token: s.token }), 401, 'UNAUTHORIZED');
    }
  });

  it('stores only a hash of the token', async () => {
    const token = await c.login();
    const rows = await c.opened.ctx.store.db.selectFrom('apiSessions').select('tokenHash').execute();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => r.tokenHash === token)).toBe(false);
  });

  it('accepts the token as a Bearer authorization too', async () => {
    const token = await c.login();
    const r = await c.call('GET', `${CLIENT}/current-identity`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
  });

  it('refuses bad credentials with the generic INVALID_AUTH', async () => {
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'admin', password: 'wrong-password' } }), 401, 'INVALID_AUTH');
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'nobody', password: 'wrong-password' } }), 401, 'INVALID_AUTH');
  });

  it('validates the request', async () => {
    expect(expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'abc', password: 'password' } }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('username');
    expect(expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'admin', password: '1234' } }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('password');
    expect(expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'a'.repeat(101), password: 'password' } }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('username');
    expect(expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'admin' } }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('password');
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=magic`, { body: ADMIN }), 400, 'INVALID_AUTH_METHOD');
    expectError(await c.call('POST', `${CLIENT}/authenticate`, { body: ADMIN }), 400, 'COULD_NOT_VALIDATE');
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: '{"username": ' }), 400, 'COULD_NOT_PARSE_BODY');
  });

  it('answers 401 with the envelope for a missing or unknown token', async () => {
    expectError(await c.call('GET', `${CLIENT}/current-identity`), 401, 'UNAUTHORIZED');
    expectError(await c.call('GET', `${CLIENT}/current-identity`, { token: 'not-a-token' }), 401, 'UNAUTHORIZED');
    expectError(await c.call('GET', `${MGMT}/identities`, { token: 'not-a-token' }), 401, 'UNAUTHORIZED');
  });

  it('expires an idle session and keeps a used one alive', async () => {
    const idle = await c.login();
    const idle2 = await c.login();
    const busy = await c.login();
    for (let i = 0; i < 4; i++) {
      c.clock.advance(10 * 60_000);
      // current-identity reads the session in the same statement as the identity: it keeps it alive too.
      expect((await c.call('GET', `${CLIENT}/current-identity`, { token: busy })).status).toBe(200);
    }
    // 40 minutes later: the idle one is past the 30-minute timeout, the busy one was refreshed.
    expectError(await c.call('GET', `${CLIENT}/current-api-session`, { token: idle }), 401, 'UNAUTHORIZED');
    expectError(await c.call('GET', `${CLIENT}/current-identity`, { token: idle2 }), 401, 'UNAUTHORIZED');
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token: busy })).status).toBe(200);
    const alive = await c.call('GET', `${CLIENT}/current-api-session`, { token: busy });
    expect(alive.status).toBe(200);
    expect(alive.body.data.expirationSeconds).toBeGreaterThan(29 * 60);
    c.clock.advance(31 * 60_000);
    expectError(await c.call('GET', `${CLIENT}/current-api-session`, { token: busy }), 401, 'UNAUTHORIZED');
  });

  it("gives the session's own request as its cached last activity: SDKs read it as the controller's clock", async () => {
    const token = await c.login();
    // Less than the minute after which lastActivityAt is written again: the stored value stays behind.
    c.clock.advance(45_000);
    const r = await c.call('GET', `${CLIENT}/current-api-session`, { token });
    expect(r.status).toBe(200);
    expect(Date.parse(r.body.data.cachedLastActivityAt)).toBe(c.clock.now().getTime());
    expect(Date.parse(r.body.data.lastActivityAt)).toBeLessThan(c.clock.now().getTime());
  });

  it('refuses a disabled identity at login and on its open sessions', async () => {
    const id = await c.user('disabled-user');
    const token = await c.login('disabled-user', 'password1');
    await c.opened.ctx.store.db.updateTable('identities').set({ disabled: 1 }).where('id', '=', id).execute();
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'disabled-user', password: 'password1' } }), 401, 'INVALID_AUTH');
    expectError(await c.call('GET', `${CLIENT}/current-identity`, { token }), 401, 'UNAUTHORIZED');
    // A disable period that has passed lets the identity back in.
    await c.opened.ctx.store.db.updateTable('identities').set({ disabledUntil: new Date(c.clock.now().getTime() - 1000).toISOString() }).where('id', '=', id).execute();
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token })).status).toBe(200);
  });

  it('lets a non-admin use client operations but no management operation', async () => {
    await c.user('plain-user');
    const token = await c.login('plain-user', 'password1');
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token })).body.data.isAdmin).toBe(false);
    expect((await c.call('GET', `${MGMT}/current-identity`, { token })).status).toBe(200);
    const refused = expectError(await c.call('GET', `${MGMT}/identities`, { token }), 401, 'UNAUTHORIZED');
    expect(refused.message).toMatch(/admin/);
  });
});
