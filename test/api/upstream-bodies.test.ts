// Request and response bodies as OpenZiti's own clients send and read them: the empty strings ZAC's
// forms send (upstream's documents set no minimum length there and apply the default), and sessions
// read back with their token (upstream's sessionDetail requires it; SDKs refresh edge routers that way).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
const call = (method: string, url: string, body?: unknown, token = admin) => c.call(method, url, { token, body });

beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

describe('empty strings as upstream treats them', () => {
  it('identity create/update with ZAC’s default form: externalId "" is stored as none, authPolicyId "" is the default policy', async () => {
    // What ZAC 4.5 sends from its identity form.
    const body = { name: 'zac-identity', type: 'Device', isAdmin: false, roleAttributes: [], externalId: '', authPolicyId: '', enrollment: { ott: true }, tags: {} };
    const r = await call('POST', `${MGMT}/identities`, body);
    expect(r.status, r.text).toBe(201);
    const got = (await call('GET', `${MGMT}/identities/${r.body.data.id}`)).body.data;
    expect(got.externalId ?? null).toBeNull();
    expect(got.authPolicyId).toBe('default');
    const put = await call('PUT', `${MGMT}/identities/${r.body.data.id}`, { name: 'zac-identity', type: 'Device', isAdmin: false, externalId: '', roleAttributes: ['x'] });
    expect(put.status, put.text).toBe(200);
    expect((await call('PATCH', `${MGMT}/identities/${r.body.data.id}`, { externalId: 'ext-1' })).status).toBe(200);
    expect((await call('GET', `${MGMT}/identities/${r.body.data.id}`)).body.data.externalId).toBe('ext-1');
    expect((await call('PATCH', `${MGMT}/identities/${r.body.data.id}`, { externalId: '' })).status).toBe(200);
    expect((await call('GET', `${MGMT}/identities/${r.body.data.id}`)).body.data.externalId ?? null).toBeNull();
  });

  it('service create with terminatorStrategy "" gets smartrouting, as upstream', async () => {
    const r = await call('POST', `${MGMT}/services`, { name: 'zac-service', encryptionRequired: true, terminatorStrategy: '', roleAttributes: [], configs: [], tags: {} });
    expect(r.status, r.text).toBe(201);
    expect((await call('GET', `${MGMT}/services/${r.body.data.id}`)).body.data.terminatorStrategy).toBe('smartrouting');
    expect((await call('PATCH', `${MGMT}/services/${r.body.data.id}`, { terminatorStrategy: 'weighted' })).status).toBe(200);
    expect((await call('PATCH', `${MGMT}/services/${r.body.data.id}`, { terminatorStrategy: '' })).status).toBe(200);
    expect((await call('GET', `${MGMT}/services/${r.body.data.id}`)).body.data.terminatorStrategy).toBe('smartrouting');
  });

  it('external JWT signer and CA optional text fields: "" means not given, and the default applies', async () => {
    const signer = await call('POST', `${MGMT}/external-jwt-signers`, {
      name: 'idp-blank', enabled: true, issuer: 'https://idp.example', audience: '', jwksEndpoint: 'https://idp.example/jwks', certPem: '', kid: '', claimsProperty: '', clientId: '', externalAuthUrl: '',
    });
    expect(signer.status, signer.text).toBe(201);
    const s = (await call('GET', `${MGMT}/external-jwt-signers/${signer.body.data.id}`)).body.data;
    expect(s.claimsProperty).toBe('sub');
    expect(s.jwksEndpoint).toBe('https://idp.example/jwks');
    const { TestCa } = await import('../helpers/certs.js');
    const ca = await call('POST', `${MGMT}/cas`, { name: 'blank-format-ca', certPem: new TestCa('Blank Format CA').pem, identityRoles: [], identityNameFormat: '', isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: false, isAuthEnabled: false });
    expect(ca.status, ca.text).toBe(201);
    expect((await call('GET', `${MGMT}/cas/${ca.body.data.id}`)).body.data.identityNameFormat).toBe('[caName]-[commonName]');
  });

  it('what `ziti edge` 1.1.10 sends: a CA patch with "externalIdClaim": {}, a certificate signer with no JWKS endpoint (null)', async () => {
    const { TestCa, selfSignedCert } = await import('../helpers/certs.js');
    const ca = await call('POST', `${MGMT}/cas`, { name: 'cli-ca', certPem: new TestCa('CLI CA').pem, identityRoles: [], isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: false, isAuthEnabled: false });
    expect(ca.status, ca.text).toBe(201);
    // The CLI's update always carries an empty claim, whatever else it changes.
    const patched = await call('PATCH', `${MGMT}/cas/${ca.body.data.id}`, { name: 'cli-ca-renamed', externalIdClaim: {} });
    expect(patched.status, patched.text).toBe(200);
    expect((await call('GET', `${MGMT}/cas/${ca.body.data.id}`)).body.data.name).toBe('cli-ca-renamed');
    const signer = await call('POST', `${MGMT}/external-jwt-signers`, { name: 'cert-signer', enabled: true, issuer: 'https://cert.example', audience: 'a', certPem: selfSignedCert('cert-signer').certPem });
    expect(signer.status, signer.text).toBe(201);
    expect((await call('GET', `${MGMT}/external-jwt-signers/${signer.body.data.id}`)).body.data.jwksEndpoint).toBeNull();
  });

  it('an OS posture check as `ziti edge create posture-check os` sends it: capitalised keys of an untagged Go struct', async () => {
    const r = await call('POST', `${MGMT}/posture-checks`, { typeId: 'OS', name: 'cli-os', roleAttributes: [], operatingSystems: [{ Type: 'Windows', Versions: ['10.0.19041'] }] });
    expect(r.status, r.text).toBe(201);
    expect((await call('GET', `${MGMT}/posture-checks/${r.body.data.id}`)).body.data.operatingSystems).toEqual([{ type: 'Windows', versions: ['10.0.19041'] }]);
    const p = await call('PATCH', `${MGMT}/posture-checks/${r.body.data.id}`, { typeId: 'OS', operatingSystems: [{ TYPE: 'Linux', versions: [] }] });
    expect(p.status, p.text).toBe(200);
    // Still strict about keys that are not there in any case.
    expect((await call('POST', `${MGMT}/posture-checks`, { typeId: 'OS', name: 'cli-os-2', operatingSystems: [{ Kind: 'Windows' }] })).status).toBe(400);
  });

  it('the default auth policy lets an expired certificate log in (to extend it), as upstream\'s does', async () => {
    expect((await call('GET', `${MGMT}/auth-policies/default`)).body.data.primary.cert).toEqual({ allowed: true, allowExpiredCerts: true });
  });

  it('still refuses "" where a value is required or upstream sets a minimum (names, usernames, passwords)', async () => {
    expectError(await call('POST', `${MGMT}/services`, { name: '', encryptionRequired: true }), 400);
    const id = (await call('POST', `${MGMT}/identities`, { name: 'needs-creds', type: 'User', isAdmin: false })).body.data.id;
    expectError(await call('POST', `${MGMT}/authenticators`, { identityId: id, method: 'updb', username: '', password: 'password1' }), 400);
    // Nothing half-made: the refused service does not exist.
    expect((await call('GET', `${MGMT}/services?filter=${encodeURIComponent('name = ""')}`)).body.data).toEqual([]);
  });
});

// Issue 42c. Upstream decodes a body with Go's JSON decoding, which drops fields its definition lacks,
// and newer clients send newer fields: 2.0.3's `ziti edge create identity` sends "permissions": null.
describe('fields a body does not declare are ignored, as upstream ignores them', () => {
  it('identity create as `ziti edge` 2.0.3 sends it: permissions null is none; permissions [] and admin_readonly still work', async () => {
    const r = await call('POST', `${MGMT}/identities`, { name: 'cli-2.0.3', type: 'Default', isAdmin: false, enrollment: { ott: true }, permissions: null, roleAttributes: null, authPolicyId: null, externalId: null, tags: null });
    expect(r.status, r.text).toBe(201);
    const id = r.body.data.id;
    expect((await call('GET', `${MGMT}/identities/${id}`)).body.data.permissions).toEqual([]);
    expect((await call('PATCH', `${MGMT}/identities/${id}`, { permissions: ['admin_readonly'] })).status).toBe(200);
    expect((await call('GET', `${MGMT}/identities/${id}`)).body.data.permissions).toEqual(['admin_readonly']);
    expect((await call('PATCH', `${MGMT}/identities/${id}`, { permissions: null })).status).toBe(200);
    expect((await call('GET', `${MGMT}/identities/${id}`)).body.data.permissions).toEqual([]);
    expect((await call('PUT', `${MGMT}/identities/${id}`, { name: 'cli-2.0.3', type: 'Default', isAdmin: false, permissions: null })).status).toBe(200);
    // The values of a declared field are still checked: a permission upstream does not define is refused.
    expect(expectError(await call('PATCH', `${MGMT}/identities/${id}`, { permissions: ['service.fly'] }), 400, 'COULD_NOT_VALIDATE').cause.field).toMatch(/^permissions/);
  });

  it('drops undeclared fields on create, update and patch, at the top and inside nested objects, of both APIs', async () => {
    const made = await call('POST', `${MGMT}/identities`, { name: 'with-extras', type: 'Device', isAdmin: false, colour: 'red', interfaces: [{ name: 'eth0' }], enrollment: { ott: true, future: 1 } });
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id;
    const got = (await call('GET', `${MGMT}/identities/${id}`)).body.data;
    expect(got.colour).toBeUndefined();
    expect(got.enrollment.ott).toBeDefined();
    expect((await call('PATCH', `${MGMT}/identities/${id}`, { name: 'with-extras-2', colour: 'blue' })).status).toBe(200);
    expect((await call('PUT', `${MGMT}/identities/${id}`, { name: 'with-extras-3', type: 'Device', isAdmin: false, colour: 'green' })).status).toBe(200);
    expect((await call('GET', `${MGMT}/identities/${id}`)).body.data).toMatchObject({ name: 'with-extras-3' });
    // A nested closed object (an auth policy's primary.updb) and a transit router typo.
    const ap = await call('POST', `${MGMT}/auth-policies`, {
      name: 'extras-policy', newerField: true,
      primary: { cert: { allowed: true, allowExpiredCerts: false, newer: 1 }, extJwt: { allowed: false, allowedSigners: [] }, updb: { allowed: true, lockoutDurationMinutes: 0, maxAttempts: 5, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false, newer: 'x' } },
      secondary: { requireTotp: false, newer: null },
    });
    expect(ap.status, ap.text).toBe(201);
    const policy = (await call('GET', `${MGMT}/auth-policies/${ap.body.data.id}`)).body.data;
    expect(policy.primary.cert).toEqual({ allowed: true, allowExpiredCerts: false });
    expect(policy.primary.updb.newer).toBeUndefined();
    expect(policy.secondary.newer).toBeUndefined();
    const tr = await call('POST', `${MGMT}/transit-routers`, { name: 'tr-typo', nme: 'x' });
    expect(tr.status, tr.text).toBe(201);
    // The client API: a session request with a field of a newer SDK.
    const svc = await call('POST', `${MGMT}/services`, { name: 'extras-svc', encryptionRequired: true });
    await call('POST', `${MGMT}/service-policies`, { name: 'extras-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#all'], serviceRoles: [`@${svc.body.data.id}`] });
    const session = await call('POST', `${CLIENT}/sessions`, { serviceId: svc.body.data.id, type: 'Dial', newerSdkField: { a: 1 } });
    expect(session.status, session.text).toBe(201);
  });

  it('still refuses a declared field of the wrong type, and a missing required one', async () => {
    expect(expectError(await call('POST', `${MGMT}/identities`, { name: 'typed', type: 'Device', isAdmin: 'no', colour: 'red' }), 400, 'COULD_NOT_PARSE_BODY').cause.field).toBe('isAdmin');
    expectError(await call('POST', `${MGMT}/identities`, { nme: 'typo', type: 'Device', isAdmin: false }), 400, 'COULD_NOT_VALIDATE');
  });

  it('shows those bodies open in the served OpenAPI document; ztc\'s own formats stay closed', async () => {
    const doc = (await c.call('GET', '/docs/openapi/edge-management.json')).body;
    const body = (path: string, method: string) => {
      const s = doc.paths[`${MGMT}${path}`][method].requestBody.content['application/json'].schema;
      return s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s;
    };
    expect(JSON.stringify(body('/identities', 'post'))).not.toContain('"additionalProperties":false');
    expect(JSON.stringify(body('/auth-policies/{id}', 'patch'))).not.toContain('"additionalProperties":false');
    expect(body('/api-tokens', 'post').additionalProperties).toBe(false);
    const strict = await call('POST', `${MGMT}/api-tokens`, { name: 'tok', colour: 'red' });
    expect(expectError(strict, 400, 'COULD_NOT_VALIDATE').cause.field).toBe('colour');
  });
});

describe('sessions carry their token when read back', () => {
  it('to the session’s own identity (client API) and to admins (management API), sealed at rest', async () => {
    const user = await c.user('token-reader');
    const svc = (await call('POST', `${MGMT}/services`, { name: 'token-svc', encryptionRequired: true })).body.data.id;
    await call('POST', `${MGMT}/service-policies`, { name: 'token-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${user}`], serviceRoles: [`@${svc}`] });
    const token = await c.login('token-reader', 'password1');
    const made = await call('POST', `${CLIENT}/sessions`, { serviceId: svc, type: 'Dial' }, token);
    expect(made.status, made.text).toBe(201);
    const sessionToken = made.body.data.token as string;
    expect(sessionToken).toMatch(/.{16,}/);

    const own = await call('GET', `${CLIENT}/sessions/${made.body.data.id}`, undefined, token);
    expect(own.body.data.token).toBe(sessionToken);
    const ownList = await call('GET', `${CLIENT}/sessions`, undefined, token);
    expect(ownList.body.data.map((s: { token: string }) => s.token)).toEqual([sessionToken]);
    expect((await call('GET', `${MGMT}/sessions/${made.body.data.id}`)).body.data.token).toBe(sessionToken);
    expect((await call('GET', `${MGMT}/sessions?filter=${encodeURIComponent(`id = "${made.body.data.id}"`)}`)).body.data[0].token).toBe(sessionToken);

    // Another identity does not see it at all.
    await c.user('token-other');
    const other = await c.login('token-other', 'password1');
    expectError(await call('GET', `${CLIENT}/sessions/${made.body.data.id}`, undefined, other), 404);

    // At rest: a hash to look it up by and a sealed copy, never the token itself.
    const row = await c.opened.ctx.store.db.selectFrom('sessions').selectAll().where('id', '=', made.body.data.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(sessionToken);
    expect(row.tokenSealed).toMatch(/^v1:/);
    // Presented tokens are still found by hash (the session-token header of a service's edge routers).
    expect((await c.call('GET', `${CLIENT}/services/${svc}/edge-routers`, { token, headers: { 'session-token': sessionToken } })).status).toBe(200);
  });
});
