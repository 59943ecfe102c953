// POST /current-api-session/totp-token (2.x edge API, both APIs): a TOTP code of the caller's MFA becomes
// a JWT proving when it was checked (upstream controller v2.0.3 CreateTotpToken): z_t "t", the access
// token's subject, audience and API session, issued by the controller's root issuer, signed with the key
// of the access tokens (verifiable with /oidc/keys). Only an OIDC API session gets one, as upstream.
import { createLocalJWKSet, jwtVerify } from 'jose';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { claimsOf, oidcClient } from '../helpers/oidc.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController({}, {});
  admin = await c.login();
});
afterAll(() => c.close());

const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });
const code = (secret: string, offsetSeconds = 0) => generate({ secret, epoch: Math.floor(c.clock.now().getTime() / 1000) + offsetSeconds });

async function user(name: string) {
  const id = (await mg('POST', '/identities', { name, type: 'User', isAdmin: false })).body.data.id as string;
  expect((await mg('POST', '/authenticators', { identityId: id, method: 'updb', username: name, password: 'password1' })).status).toBe(201);
  return id;
}

describe('POST /current-api-session/totp-token', () => {
  it('turns a TOTP code into a signed token for the OIDC API session, on both APIs', async () => {
    const id = await user('totp-token-user');
    const oidc = oidcClient(c);
    const tokens = await oidc.goPassword('totp-token-user', 'password1');
    const access = tokens.access_token;
    // Not enrolled in MFA yet: 409 MFA_NOT_ENROLLED, as upstream.
    expectError(await c.call('POST', `${CLIENT}/current-api-session/totp-token`, { bearer: access, body: { code: '123456' } }), 409, 'MFA_NOT_ENROLLED');
    // Enroll MFA with the access token.
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa`, { bearer: access })).status).toBe(201);
    const started = (await c.call('GET', `${CLIENT}/current-identity/mfa`, { bearer: access })).body.data;
    const secret = new URL(started.provisioningUrl).searchParams.get('secret')!;
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { bearer: access, body: { code: await code(secret) } })).status).toBe(200);

    expectError(await c.call('POST', `${CLIENT}/current-api-session/totp-token`, { bearer: access, body: { code: '000000' } }), 400, 'MFA_INVALID_TOKEN');
    c.clock.advance(30_000);
    const now = c.clock.now();
    const made = await c.call('POST', `${CLIENT}/current-api-session/totp-token`, { bearer: access, body: { code: await code(secret) } });
    expect(made.status, made.text).toBe(200);
    const { token, issuedAt } = made.body.data;
    const jwks = (await c.call('GET', '/oidc/keys')).body;
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks), { currentDate: now });
    const a = claimsOf(access);
    expect(payload).toMatchObject({ z_t: 't', sub: id, z_asid: a.z_asid, aud: [a.aud].flat(), iss: `https://localhost:${c.running.ctx.config.port}` });
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    expect(payload.exp).toBeUndefined();
    expect(Date.parse(issuedAt)).toBe((payload.iat as number) * 1000);
    expect(Math.abs(Date.parse(issuedAt) - now.getTime())).toBeLessThan(1000);
    // A code works once.
    expectError(await c.call('POST', `${CLIENT}/current-api-session/totp-token`, { bearer: access, body: { code: await code(secret) } }), 400, 'MFA_INVALID_TOKEN');
    // The management API serves it too.
    c.clock.advance(30_000);
    const viaMgmt = await c.call('POST', `${MGMT}/current-api-session/totp-token`, { bearer: access, body: { code: await code(secret) } });
    expect(viaMgmt.status, viaMgmt.text).toBe(200);
    // Recovery codes are not TOTP codes.
    expectError(await c.call('POST', `${CLIENT}/current-api-session/totp-token`, { bearer: access, body: { code: started.recoveryCodes[0] } }), 400, 'MFA_INVALID_TOKEN');
    const doc = JSON.parse((await c.call('GET', `${CLIENT}/specs/edge-client/spec`)).body.data);
    expect(doc.paths[`${CLIENT}/current-api-session/totp-token`].post.operationId).toBe('createTotpToken');
  });

  it('is refused to a zt-session API session (upstream\'s INVALID_BACKING_TOKEN_TYPE) and without a session', async () => {
    await user('totp-legacy');
    const legacy = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'totp-legacy', password: 'password1' } })).body.data.token as string;
    expectError(await c.call('POST', `${CLIENT}/current-api-session/totp-token`, { token: legacy, body: { code: '123456' } }), 400, 'INVALID_BACKING_TOKEN_TYPE');
    expectError(await c.call('POST', `${CLIENT}/current-api-session/totp-token`, { body: { code: '123456' } }), 401);
  });

  it('spends the identity\'s budget of wrong MFA codes: past it, 429 before any code is checked', async () => {
    await user('totp-guesser');
    const access = (await oidcClient(c).goPassword('totp-guesser', 'password1')).access_token;
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa`, { bearer: access })).status).toBe(201);
    const started = (await c.call('GET', `${CLIENT}/current-identity/mfa`, { bearer: access })).body.data;
    const secret = new URL(started.provisioningUrl).searchParams.get('secret')!;
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { bearer: access, body: { code: await code(secret) } })).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await c.call('POST', `${CLIENT}/current-api-session/totp-token`, { bearer: access, body: { code: '000000' } })).status);
    expect(statuses.slice(0, 10).every((s) => s === 400)).toBe(true);
    expect(statuses.slice(10)).toContain(429);
  });
});
