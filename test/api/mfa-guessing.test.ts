// MFA code guessing: wrong codes end the login that sent them after a few, and cost the identity time
// whatever sessions they come from, as wrong passwords do. Over real TLS, codes computed by otplib.
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_DELAY_MS, FREE_ATTEMPTS } from '../../src/model/auth/login-budget.js';
import { MAX_PARTIAL_FAILURES } from '../../src/model/auth/mfa-budget.js';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  // No per-address limit: the budgets alone must hold.
  c = await startTlsController({ authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 });
  admin = await c.login();
});
afterAll(() => c.close());

const code = (secret: string) => generate({ secret, epoch: Math.floor(c.clock.now().getTime() / 1000) });
/** A wrong code: the right one with its first digit changed. */
const wrong = async (secret: string) => {
  const right = await code(secret);
  return String((Number(right[0]) + 1) % 10) + right.slice(1);
};
const passwordLogin = async (name: string) => {
  const r = await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: name, password: 'password1' } });
  expect(r.status, r.text).toBe(200);
  return r.body.data.token as string;
};
const mfa = (token: string, value: string) => c.call('POST', `${CLIENT}/authenticate/mfa`, { token, body: { code: value } });

/** A user with a password and verified MFA; returns its TOTP secret. */
async function mfaUser(name: string) {
  const id = (await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'User', isAdmin: false } })).body.data.id;
  await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: name, password: 'password1' } });
  const token = await passwordLogin(name);
  expect((await c.call('POST', `${CLIENT}/current-identity/mfa`, { token })).status).toBe(201);
  const url = (await c.call('GET', `${CLIENT}/current-identity/mfa`, { token })).body.data.provisioningUrl;
  const secret = new URL(url).searchParams.get('secret')!;
  expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token, body: { code: await code(secret) } })).status).toBe(200);
  // Each code is accepted once: later ones must come from a later time step.
  c.clock.advance(30_000);
  return secret;
}

describe('wrong MFA codes', () => {
  it(`end the login that sent ${MAX_PARTIAL_FAILURES} of them`, async () => {
    const secret = await mfaUser('mfa-session-guess');
    const partial = await passwordLogin('mfa-session-guess');
    for (let i = 1; i < MAX_PARTIAL_FAILURES; i++) expectError(await mfa(partial, await wrong(secret)), 401, 'MFA_INVALID_TOKEN');
    const last = await mfa(partial, await wrong(secret));
    expect(expectError(last, 401, 'MFA_INVALID_TOKEN').message).toMatch(/has ended, log in again/);
    // The session is gone: even the right code does not complete it.
    expectError(await mfa(partial, await code(secret)), 401, 'UNAUTHORIZED');
    expectError(await c.call('GET', `${CLIENT}/current-api-session`, { token: partial }), 401);
    // A new login with the right code works (the identity's budget had room left).
    const again = await passwordLogin('mfa-session-guess');
    expect((await mfa(again, await code(secret))).status).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token: again })).status).toBe(200);
  });

  it(`make the identity wait after ${FREE_ATTEMPTS}, across logins, doubling; the right code restores the budget`, async () => {
    const secret = await mfaUser('mfa-account-guess');
    // Made first: making it moves the clock on, which would shorten the waits measured below.
    const bystanderSecret = await mfaUser('mfa-bystander');
    // Spread over several logins, none reaching its own limit.
    let spent = 0;
    let session = '';
    while (spent < FREE_ATTEMPTS) {
      if (spent % (MAX_PARTIAL_FAILURES - 1) === 0) session = await passwordLogin('mfa-account-guess');
      expectError(await mfa(session, await wrong(secret)), 401, 'MFA_INVALID_TOKEN');
      spent++;
    }
    // The next attempt waits, on a fresh login and even with the right code.
    const fresh = await passwordLogin('mfa-account-guess');
    const refused = await mfa(fresh, await code(secret));
    expect(expectError(refused, 429, 'RATE_LIMITED').message).toMatch(/wrong MFA codes/);
    expect(refused.headers['retry-after']).toBe(String(BASE_DELAY_MS / 1000));
    // Other identities are not affected.
    expect((await mfa(await passwordLogin('mfa-bystander'), await code(bystanderSecret))).status).toBe(200);
    // Stepping the wall clock does not end the wait (it runs on the monotonic clock). Back a day: ahead,
    // the partial session itself would have timed out.
    const wall = c.clock.now().getTime();
    c.clock.set(wall - 86_400_000);
    try {
      const r = await mfa(fresh, await code(secret));
      expect(r.status, r.text).toBe(429);
    } finally {
      c.clock.set(wall);
    }
    // After the wait one attempt may go; a wrong one doubles the next wait.
    c.clock.advance(BASE_DELAY_MS);
    expectError(await mfa(fresh, await wrong(secret)), 401, 'MFA_INVALID_TOKEN');
    expect((await mfa(fresh, await code(secret))).headers['retry-after']).toBe(String((2 * BASE_DELAY_MS) / 1000));
    c.clock.advance(2 * BASE_DELAY_MS);
    expect((await mfa(fresh, await code(secret))).status).toBe(200);
    // Restored: wrong codes are 401 again, not 429.
    c.clock.advance(30_000);
    expectError(await mfa(await passwordLogin('mfa-account-guess'), await wrong(secret)), 401, 'MFA_INVALID_TOKEN');
  });

  it('are counted when they start: 30 concurrent guesses get exactly the free attempts answered', async () => {
    const secret = await mfaUser('mfa-burst');
    const sessions = await Promise.all(Array.from({ length: 10 }, () => passwordLogin('mfa-burst')));
    const bad = await wrong(secret);
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => mfa(sessions[i % 10], bad)));
    expect(answers.filter((a) => a.status === 401)).toHaveLength(FREE_ATTEMPTS);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(30 - FREE_ATTEMPTS);
  });

  it('on a full session (regenerating recovery codes) spend the same budget', async () => {
    const secret = await mfaUser('mfa-full-guess');
    const token = await passwordLogin('mfa-full-guess');
    expect((await mfa(token, await code(secret))).status).toBe(200);
    for (let i = 0; i < FREE_ATTEMPTS; i++) expect((await c.call('POST', `${CLIENT}/current-identity/mfa/recovery-codes`, { token, body: { code: await wrong(secret) } })).status).toBe(401);
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa/recovery-codes`, { token, body: { code: await wrong(secret) } })).status).toBe(429);
  });
});
