// TOTP MFA with real codes computed by otplib at the controller's (test-controlled) time.
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const code = (secret: string, offsetSeconds = 0) => generate({ secret, epoch: Math.floor(c.clock.now().getTime() / 1000) + offsetSeconds });
const secretOf = (url: string) => new URL(url).searchParams.get('secret')!;

/** A user with a password and verified MFA; returns its secret and recovery codes. */
async function mfaUser(name: string) {
  await c.user(name);
  const token = await c.login(name, 'password1');
  expect((await c.call('POST', `${CLIENT}/current-identity/mfa`, { token })).status).toBe(201);
  const d = (await c.call('GET', `${CLIENT}/current-identity/mfa`, { token })).body.data;
  const secret = secretOf(d.provisioningUrl);
  expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token, body: { code: await code(secret) } })).status).toBe(200);
  c.clock.advance(30_000);
  return { token, secret, recoveryCodes: d.recoveryCodes as string[] };
}

describe('a login waiting for its MFA code', () => {
  it('ends after 5 minutes, on sight and in the sweep, so abandoned logins leave no sessions', async () => {
    const { secret } = await mfaUser('mfa-late');
    const login = async () => (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'mfa-late', password: 'password1' } })).body.data.token as string;
    const late = await login();
    const swept = await login();
    c.clock.advance(5 * 60_000 + 1_000);
    const r = await c.call('POST', `${CLIENT}/authenticate/mfa`, { token: late, body: { code: await code(secret) } });
    expectError(r, 401, 'UNAUTHORIZED');
    expect(r.body.error.message).toMatch(/MFA code was not given within 5 minutes/);
    const { expireApiSessions } = await import('../../src/model/auth/api-sessions.js');
    expect(await expireApiSessions(c.opened.ctx)).toBeGreaterThanOrEqual(1);
    expectError(await c.call('GET', `${CLIENT}/current-api-session`, { token: swept }), 401);
    // In time, the code still completes a login.
    const inTime = await login();
    c.clock.advance(30_000);
    expect((await c.call('POST', `${CLIENT}/authenticate/mfa`, { token: inTime, body: { code: await code(secret) } })).status).toBe(200);
  });
});

describe('MFA enrollment', () => {
  it('starts, shows a provisioning URL and QR code, verifies, and refuses a second start', async () => {
    await c.user('mfa-a');
    const token = await c.login('mfa-a', 'password1');
    expectError(await c.call('GET', `${CLIENT}/current-identity/mfa`, { token }), 404);
    expectError(await c.call('GET', `${CLIENT}/current-identity/mfa/qr-code`, { token }), 404);
    expectError(await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token, body: { code: '123456' } }), 404);
    const started = await c.call('POST', `${CLIENT}/current-identity/mfa`, { token });
    expect(started.status).toBe(201);
    expect(started.body.data.id).toBeTruthy();
    const d = (await c.call('GET', `${CLIENT}/current-identity/mfa`, { token })).body.data;
    expect(d.isVerified).toBe(false);
    expect(d.provisioningUrl).toMatch(/^otpauth:\/\/totp\/localhost:mfa-a\?secret=[A-Z2-7]{32}&issuer=localhost$/);
    expect(d.recoveryCodes).toHaveLength(20);
    expect(d.recoveryCodes.every((r: string) => /^[A-Z2-7]{6}$/.test(r))).toBe(true);
    // Upstream's links: what to do next with a pending enrollment.
    expect(d._links).toEqual({ self: { href: './current-identity/mfa' }, 'current-identity': { href: './current-identity' }, verify: { href: './current-identity/mfa/verify' }, qr: { href: './current-identity/mfa/qr-code' } });
    const qr = await c.app.inject({ method: 'GET', url: `${CLIENT}/current-identity/mfa/qr-code`, headers: { 'zt-session': token } });
    expect(qr.statusCode).toBe(200);
    expect(qr.headers['content-type']).toBe('image/png');
    expect(qr.rawPayload.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expectError(await c.call('POST', `${CLIENT}/current-identity/mfa`, { token }), 409, 'ALREADY_MFA_ENROLLED');
    expectError(await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token, body: { code: '000000' } }), 400, 'MFA_INVALID_TOKEN');
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token, body: { code: await code(secretOf(d.provisioningUrl)) } })).status).toBe(200);
    expectError(await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token, body: { code: await code(secretOf(d.provisioningUrl), 30) } }), 404);
    expectError(await c.call('GET', `${CLIENT}/current-identity/mfa/qr-code`, { token }), 404);
    const after = (await c.call('GET', `${CLIENT}/current-identity/mfa`, { token })).body.data;
    expect(after).toMatchObject({ isVerified: true, provisioningUrl: '', recoveryCodes: [] });
    expect(after._links).toEqual({ self: { href: './current-identity/mfa' }, 'current-identity': { href: './current-identity' }, 'recovery-codes': { href: './current-identity/mfa/recovery-codes' } });
    expect((await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "mfa-a"')}`, { token: admin })).body.data[0].isMfaEnabled).toBe(true);
    // The session that verified enrollment has done its MFA.
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token })).status).toBe(200);
  });

  it('lets an unverified enrollment be deleted with an empty code', async () => {
    await c.user('mfa-b');
    const token = await c.login('mfa-b', 'password1');
    await c.call('POST', `${CLIENT}/current-identity/mfa`, { token });
    expect((await c.call('DELETE', `${CLIENT}/current-identity/mfa`, { token, headers: { 'mfa-validation-code': '' } })).status).toBe(200);
    expectError(await c.call('DELETE', `${CLIENT}/current-identity/mfa`, { token }), 404);
  });
});

describe('logging in with MFA', () => {
  it('makes later logins partial until a code is given, and limits what a partial session may do', async () => {
    const { secret } = await mfaUser('mfa-c');
    const partial = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'mfa-c', password: 'password1' } })).body.data;
    expect(partial).toMatchObject({ isMfaRequired: true, isMfaComplete: false });
    expect(partial.authQueries).toEqual([{ typeId: 'MFA', provider: 'ziti', httpMethod: 'POST', httpUrl: './authenticate/mfa', minLength: 4, maxLength: 6, format: 'alphaNumeric' }]);
    const token = partial.token;
    expectError(await c.call('GET', `${CLIENT}/current-identity`, { token }), 401, 'MFA_REQUIRED');
    expect((await c.call('GET', `${CLIENT}/current-api-session`, { token })).status).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity/mfa`, { token })).status).toBe(200);
    expectError(await c.call('POST', `${CLIENT}/authenticate/mfa`, { token, body: { code: '000000' } }), 401, 'MFA_INVALID_TOKEN');
    const good = await code(secret);
    expect((await c.call('POST', `${CLIENT}/authenticate/mfa`, { token, body: { code: good } })).status).toBe(200);
    const full = (await c.call('GET', `${CLIENT}/current-api-session`, { token })).body.data;
    expect(full).toMatchObject({ isMfaRequired: true, isMfaComplete: true, authQueries: [] });
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token })).status).toBe(200);
    // The same code again, inside its window, on another session: refused.
    const second = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'mfa-c', password: 'password1' } })).body.data.token;
    expectError(await c.call('POST', `${CLIENT}/authenticate/mfa`, { token: second, body: { code: good } }), 401, 'MFA_INVALID_TOKEN');
    c.clock.advance(30_000);
    expect((await c.call('POST', `${CLIENT}/authenticate/mfa`, { token: second, body: { code: await code(secret) } })).status).toBe(200);
  });

  it('accepts each recovery code once, and regenerating replaces them all', async () => {
    const { token, secret, recoveryCodes } = await mfaUser('mfa-d');
    const login = async () => (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'mfa-d', password: 'password1' } })).body.data.token;
    const s1 = await login();
    expect((await c.call('POST', `${CLIENT}/authenticate/mfa`, { token: s1, body: { code: recoveryCodes[0] } })).status).toBe(200);
    const s2 = await login();
    expectError(await c.call('POST', `${CLIENT}/authenticate/mfa`, { token: s2, body: { code: recoveryCodes[0] } }), 401, 'MFA_INVALID_TOKEN');
    const view = await c.call('GET', `${CLIENT}/current-identity/mfa/recovery-codes`, { token, headers: { 'mfa-validation-code': await code(secret) } });
    expect(view.status).toBe(200);
    expect(view.body.data.recoveryCodes).toEqual(recoveryCodes.slice(1));
    expectError(await c.call('GET', `${CLIENT}/current-identity/mfa/recovery-codes`, { token, headers: { 'mfa-validation-code': '000000' } }), 401);
    c.clock.advance(30_000);
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa/recovery-codes`, { token, body: { code: await code(secret) } })).status).toBe(200);
    c.clock.advance(30_000);
    const fresh = (await c.call('GET', `${CLIENT}/current-identity/mfa/recovery-codes`, { token, headers: { 'mfa-validation-code': await code(secret) } })).body.data.recoveryCodes as string[];
    expect(fresh).toHaveLength(20);
    expect(fresh.some((r) => recoveryCodes.includes(r))).toBe(false);
    expectError(await c.call('POST', `${CLIENT}/authenticate/mfa`, { token: s2, body: { code: recoveryCodes[1] } }), 401);
    expect((await c.call('POST', `${CLIENT}/authenticate/mfa`, { token: s2, body: { code: fresh[0] } })).status).toBe(200);
  });

  it('disables with a current code, and an admin can remove it', async () => {
    const a = await mfaUser('mfa-e');
    expectError(await c.call('DELETE', `${CLIENT}/current-identity/mfa`, { token: a.token, headers: { 'mfa-validation-code': '000000' } }), 401);
    expect((await c.call('DELETE', `${CLIENT}/current-identity/mfa`, { token: a.token, headers: { 'mfa-validation-code': await code(a.secret) } })).status).toBe(200);
    expect((await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'mfa-e', password: 'password1' } })).body.data.isMfaRequired).toBe(false);
    await mfaUser('mfa-f');
    const id = (await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "mfa-f"')}`, { token: admin })).body.data[0].id;
    expect((await c.call('DELETE', `${MGMT}/identities/${id}/mfa`, { token: admin })).status).toBe(200);
    expect((await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'mfa-f', password: 'password1' } })).body.data.isMfaRequired).toBe(false);
    expectError(await c.call('DELETE', `${MGMT}/identities/nobody/mfa`, { token: admin }), 404);
  });
});
