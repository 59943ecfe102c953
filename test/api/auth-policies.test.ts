// Auth policies and their enforcement, identity disable/enable, API sessions as an admin sees them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const policy = (over: Record<string, unknown> = {}) => ({
  name: `policy-${Math.random().toString(36).slice(2, 8)}`,
  primary: {
    cert: { allowed: true, allowExpiredCerts: false },
    updb: { allowed: true, minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false, maxAttempts: 0, lockoutDurationMinutes: 0 },
    extJwt: { allowed: true, allowedSigners: [] },
  },
  secondary: { requireTotp: false, requireExtJwtSigner: null },
  ...over,
});
const login = (username: string, password: string) => c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username, password } });
async function userWithPolicy(name: string, authPolicyId: string, password = 'password1') {
  const id = (await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'User', isAdmin: false, authPolicyId } })).body.data.id;
  const a = await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: name, password } });
  return { id, auth: a };
}

describe('auth policies', () => {
  it('has a default policy that can be edited but not deleted', async () => {
    const d = (await c.call('GET', `${MGMT}/auth-policies/default`, { token: admin })).body.data;
    expect(d).toMatchObject({ name: 'Default', primary: { updb: { allowed: true, minPasswordLength: 5 }, cert: { allowed: true } }, secondary: { requireTotp: false } });
    // In use (the admin is under it): 409 naming the identities, as upstream 1.1.10 answers.
    const used = expectError(await c.call('DELETE', `${MGMT}/auth-policies/default`, { token: admin }), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    expect(used.cause).toMatchObject({ field: 'authPolicyId' });
    // Unused, ztc still keeps it (identities made without authPolicyId need it); upstream would delete it.
    const other = await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: { name: 'holder', primary: d.primary, secondary: d.secondary } });
    expect(other.status, other.text).toBe(201);
    const everyone = (await c.call('GET', `${MGMT}/identities?limit=500`, { token: admin })).body.data as { id: string }[];
    for (const i of everyone) expect((await c.call('PATCH', `${MGMT}/identities/${i.id}`, { token: admin, body: { authPolicyId: other.body.data.id } })).status).toBe(200);
    expectError(await c.call('DELETE', `${MGMT}/auth-policies/default`, { token: admin }), 400, 'ENTITY_CAN_NOT_BE_DELETED');
    for (const i of everyone) expect((await c.call('PATCH', `${MGMT}/identities/${i.id}`, { token: admin, body: { authPolicyId: 'default' } })).status).toBe(200);
    expect((await c.call('DELETE', `${MGMT}/auth-policies/${other.body.data.id}`, { token: admin })).status).toBe(200);
  });

  it('creates, patches (merging nested fields), lists and deletes; refuses deleting one in use', async () => {
    const made = await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: policy({ name: 'strict' }) });
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id;
    expect((await c.call('PATCH', `${MGMT}/auth-policies/${id}`, { token: admin, body: { primary: { updb: { minPasswordLength: 12 } } } })).status).toBe(200);
    const d = (await c.call('GET', `${MGMT}/auth-policies/${id}`, { token: admin })).body.data;
    expect(d.primary.updb).toMatchObject({ minPasswordLength: 12, allowed: true, maxAttempts: 0 });
    expect(d.primary.cert).toEqual({ allowed: true, allowExpiredCerts: false });
    // Upstream's CLI (`ziti edge update auth-policy -n ...`) sends allowedSigners null when it changes other fields: 200, signers kept.
    const cli = await c.call('PATCH', `${MGMT}/auth-policies/${id}`, { token: admin, body: { name: 'strict', primary: { cert: { allowExpiredCerts: true }, extJwt: { allowed: false, allowedSigners: null } } } });
    expect(cli.status, cli.text).toBe(200);
    expect((await c.call('GET', `${MGMT}/auth-policies/${id}`, { token: admin })).body.data.primary).toMatchObject({ cert: { allowExpiredCerts: true }, extJwt: { allowed: false, allowedSigners: d.primary.extJwt.allowedSigners } });
    expectError(await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: { name: 'half', primary: {} } }), 400, 'COULD_NOT_VALIDATE');
    expectError(await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: policy({ primary: { ...policy().primary, extJwt: { allowed: true, allowedSigners: ['nope'] } } }) }), 400, 'INVALID_FIELD');
    const { id: uid } = await userWithPolicy('strict-user', id, 'a-long-password-1');
    expectError(await c.call('DELETE', `${MGMT}/auth-policies/${id}`, { token: admin }), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    await c.call('DELETE', `${MGMT}/identities/${uid}`, { token: admin });
    expect((await c.call('DELETE', `${MGMT}/auth-policies/${id}`, { token: admin })).status).toBe(200);
    expectError(await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'x', type: 'User', isAdmin: false, authPolicyId: id } }), 400, 'INVALID_FIELD');
  });

  it('stores password rules without enforcing them by default, as upstream', async () => {
    const id = (await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: policy({ primary: { ...policy().primary, updb: { ...policy().primary.updb, minPasswordLength: 10, requireNumberChar: true, requireMixedCase: true, requireSpecialChar: true } } }) })).body.data.id;
    const { auth } = await userWithPolicy('lax-user', id, 'short');
    expect(auth.status).toBe(201);
    expect((await login('lax-user', 'short')).status).toBe(200);
  });

  it('enforces password rules on authenticators and their changes with enforcePasswordPolicy', async () => {
    const strict = await startTestController({ config: { enforcePasswordPolicy: true } });
    try {
      const root = await strict.login();
      const id = (await strict.call('POST', `${MGMT}/auth-policies`, { token: root, body: policy({ primary: { ...policy().primary, updb: { ...policy().primary.updb, minPasswordLength: 10, requireNumberChar: true, requireMixedCase: true, requireSpecialChar: true } } }) })).body.data.id;
      const user = async (name: string, password: string) => {
        const uid = (await strict.call('POST', `${MGMT}/identities`, { token: root, body: { name, type: 'Default', isAdmin: false, authPolicyId: id } })).body.data.id;
        return strict.call('POST', `${MGMT}/authenticators`, { token: root, body: { identityId: uid, method: 'updb', username: name, password } });
      };
      const e = expectError(await user('rules-user', 'short'), 400, 'INVALID_FIELD');
      expect(e.message).toMatch(/at least 10 characters, a digit, a special character, upper and lower case letters/);
      const ok = await user('rules-user-2', 'Long-enough-1');
      expect(ok.status).toBe(201);
      const token = await strict.login('rules-user-2', 'Long-enough-1');
      expectError(await strict.call('PATCH', `${CLIENT}/current-identity/authenticators/${ok.body.data.id}`, { token, body: { password: 'weakpassword', currentPassword: 'Long-enough-1' } }), 400, 'INVALID_FIELD');
    } finally {
      await strict.close();
    }
  });

  it('refuses a method the policy does not allow', async () => {
    const id = (await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: policy({ primary: { ...policy().primary, updb: { ...policy().primary.updb, allowed: false } } }) })).body.data.id;
    await userWithPolicy('no-updb', id);
    expectError(await login('no-updb', 'password1'), 401, 'INVALID_AUTH');
  });

  it('locks a username after maxAttempts failures, and enable unlocks it', async () => {
    const id = (await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: policy({ primary: { ...policy().primary, updb: { ...policy().primary.updb, maxAttempts: 3, lockoutDurationMinutes: 10 } } }) })).body.data.id;
    const { id: uid } = await userWithPolicy('lockable', id);
    for (let i = 0; i < 3; i++) expectError(await login('lockable', 'wrong-pass'), 401, 'INVALID_AUTH');
    expectError(await login('lockable', 'password1'), 401, 'INVALID_AUTH');
    c.clock.advance(11 * 60_000);
    expect((await login('lockable', 'password1')).status).toBe(200);
    for (let i = 0; i < 3; i++) await login('lockable', 'wrong-pass');
    expectError(await login('lockable', 'password1'), 401);
    expect((await c.call('POST', `${MGMT}/identities/${uid}/enable`, { token: admin })).status).toBe(200);
    expect((await login('lockable', 'password1')).status).toBe(200);
  });

  it('with requireTotp, lets a session without MFA reach only MFA enrollment', async () => {
    const id = (await c.call('POST', `${MGMT}/auth-policies`, { token: admin, body: policy({ secondary: { requireTotp: true, requireExtJwtSigner: null } }) })).body.data.id;
    await userWithPolicy('totp-required', id);
    const s = (await login('totp-required', 'password1')).body.data;
    expect(s).toMatchObject({ isMfaRequired: true, isMfaComplete: false });
    expectError(await c.call('GET', `${CLIENT}/current-identity`, { token: s.token }), 401, 'MFA_REQUIRED');
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa`, { token: s.token })).status).toBe(201);
  });
});

describe('identity disable and enable', () => {
  it('ends sessions at once, refuses logins, and lifts by itself after the duration', async () => {
    const id = await c.user('disable-me');
    const token = await c.login('disable-me', 'password1');
    expect((await c.call('POST', `${MGMT}/identities/${id}/disable`, { token: admin, body: { durationMinutes: 15 } })).status).toBe(200);
    const d = (await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data;
    expect(d.disabled).toBe(true);
    expect(Date.parse(d.disabledUntil) - Date.parse(d.disabledAt)).toBe(15 * 60_000);
    expectError(await c.call('GET', `${CLIENT}/current-identity`, { token }), 401);
    expectError(await login('disable-me', 'password1'), 401, 'INVALID_AUTH');
    c.clock.advance(16 * 60_000);
    expect((await login('disable-me', 'password1')).status).toBe(200);
    expect((await c.call('POST', `${MGMT}/identities/${id}/disable`, { token: admin, body: { durationMinutes: 0 } })).status).toBe(200);
    c.clock.advance(10 * 365 * 86_400_000);
    expectError(await login('disable-me', 'password1'), 401);
    admin = await c.login();
    expect((await c.call('POST', `${MGMT}/identities/${id}/enable`, { token: admin })).status).toBe(200);
    expect((await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data).toMatchObject({ disabled: false });
    // Absent when not disabled, as upstream's omitempty fields.
    expect((await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data).not.toHaveProperty('disabledAt');
    expect((await login('disable-me', 'password1')).status).toBe(200);
    expectError(await c.call('POST', `${MGMT}/identities/${id}/disable`, { token: admin, body: { durationMinutes: -1 } }), 400, 'COULD_NOT_VALIDATE');
    expectError(await c.call('POST', `${MGMT}/identities/nobody/disable`, { token: admin, body: { durationMinutes: 1 } }), 404);
  });
});

describe('API sessions (admin)', () => {
  it('lists, reads and deletes sessions, showing admins their tokens as upstream', async () => {
    await c.user('session-user');
    const token = await c.login('session-user', 'password1');
    const me = (await c.call('GET', `${CLIENT}/current-api-session`, { token })).body.data;
    const list = await c.call('GET', `${MGMT}/api-sessions?filter=${encodeURIComponent(`identityId = "${me.identityId}"`)}`, { token: admin });
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([me.id]);
    const one = (await c.call('GET', `${MGMT}/api-sessions/${me.id}`, { token: admin })).body.data;
    expect(one).toMatchObject({ id: me.id, identity: { name: 'session-user' }, token });
    expect(list.body.data[0].token).toBe(token);
    // Only admins: the management API refuses anyone else, and a user's own view is its own session.
    expectError(await c.call('GET', `${MGMT}/api-sessions/${me.id}`, { token }), 401);
    expect((await c.call('DELETE', `${MGMT}/api-sessions/${me.id}`, { token: admin })).status).toBe(200);
    expectError(await c.call('GET', `${CLIENT}/current-identity`, { token }), 401);
    expectError(await c.call('GET', `${MGMT}/api-sessions`, { token }), 401);
  });
});
