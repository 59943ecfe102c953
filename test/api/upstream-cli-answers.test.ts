// Answers found by running upstream's `ziti edge` CLI 1.1.10 through an admin's day against ztc and
// against upstream's own controller 1.1.10 side by side (issue 29): each test sends what the CLI sends
// (or what the error probe sent) and expects upstream's status, code and cause.
import { describe, expect, it } from 'vitest';
import { selfSignedCert } from '../helpers/certs.js';
import { controllerForFile, expectError } from '../helpers/controller.js';

const file = controllerForFile();
const mg = file.mgmt;
const made = file.created;
const updb = { allowed: true, lockoutDurationMinutes: 0, maxAttempts: 0, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false };
const policy = (name: string, allowedSigners: string[], requireExtJwtSigner: string | null = null) => ({
  name, primary: { cert: { allowed: true, allowExpiredCerts: true }, extJwt: { allowed: true, allowedSigners }, updb }, secondary: { requireTotp: false, requireExtJwtSigner },
});
const signer = (name: string, issuer: string) => ({ name, enabled: true, issuer, audience: 'ztc', jwksEndpoint: 'https://idp.example.com/keys' });

describe('posture checks as the CLI sends them', () => {
  it('take a process-multi check whose processes have null hashes and signers (`create posture-check process-multi`)', async () => {
    const id = await made('/posture-checks', {
      name: 'pm', typeId: 'PROCESS_MULTI', semantic: 'AllOf', roleAttributes: ['pc'],
      processes: [{ osType: 'Windows', path: 'C:\\a.exe', hashes: null, signerFingerprints: null }, { osType: 'Linux', path: '/usr/bin/a', hashes: null, signerFingerprints: null }],
    });
    const d = (await mg('GET', `/posture-checks/${id}`)).body.data;
    expect(d.processes).toHaveLength(2);
    expect(d.processes[0]).toMatchObject({ osType: 'Windows', path: 'C:\\a.exe' });
  });

  it('refuse an unknown operating system as upstream: COULD_NOT_VALIDATE naming the item and its value', async () => {
    const e = expectError(await mg('POST', '/posture-checks', { name: 'os-bad', typeId: 'OS', operatingSystems: [{ type: 'BeOS', versions: ['1'] }] }), 400, 'COULD_NOT_VALIDATE');
    expect(e.cause).toMatchObject({ field: 'operatingSystems.0.type', value: 'BeOS' });
    expect(e.cause.reason).toContain('[Windows WindowsServer Android iOS Linux macOS]');
  });
});

describe('deleting what others name: 409 CAN_NOT_DELETE_REFERENCED_ENTITY with the referring ids', () => {
  it('an external JWT signer an auth policy allows, then one it requires; deletable once unnamed', async () => {
    const allowed = await made('/external-jwt-signers', signer('sig-allowed', 'https://allowed.example.com'));
    const required = await made('/external-jwt-signers', signer('sig-required', 'https://required.example.com'));
    const p1 = await made('/auth-policies', policy('ap-allows', [allowed]));
    const p2 = await made('/auth-policies', policy('ap-requires', [], required));

    const e = expectError(await mg('DELETE', `/external-jwt-signers/${allowed}`), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    expect(e.message).toBe('the entity cannot be deleted because it is referenced by another entity, see cause');
    expect(e.cause).toEqual({ field: 'primary.extJwt.allowedSigners', reason: `entity type externalJwtSigners referenced by authPolicies: [${p1}]`, value: `[${p1}]` });
    const e2 = expectError(await mg('DELETE', `/external-jwt-signers/${required}`), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    expect(e2.cause).toEqual({ field: 'secondary.requireExtJwtSigner', reason: `entity type externalJwtSigner referenced by authPolicy: [${p2}]`, value: `[${p2}]` });
    // Both still there, and the policy still lists its signer.
    expect((await mg('GET', `/auth-policies/${p1}`)).body.data.primary.extJwt.allowedSigners).toEqual([allowed]);

    expect((await mg('DELETE', `/auth-policies/${p1}`)).status).toBe(200);
    expect((await mg('DELETE', `/external-jwt-signers/${allowed}`)).status).toBe(200);
  });

  it('an auth policy identities use (field authPolicyId, every identity listed)', async () => {
    const ap = await made('/auth-policies', policy('ap-used', []));
    const ids = [await made('/identities', { name: 'ap-user-1', type: 'Default', isAdmin: false, authPolicyId: ap }), await made('/identities', { name: 'ap-user-2', type: 'Default', isAdmin: false, authPolicyId: ap })].sort();
    const e = expectError(await mg('DELETE', `/auth-policies/${ap}`), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    expect(e.cause).toEqual({ field: 'authPolicyId', reason: `entity type authPolicy referenced by identity: [${ids.join(' ')}]`, value: `[${ids.join(' ')}]` });
  });

  it('a config type its configs use (upstream answers 500 there; ztc the same 409)', async () => {
    const ct = await made('/config-types', { name: 'used-type', schema: { type: 'object' } });
    const cfg = await made('/configs', { name: 'of-used-type', configTypeId: ct, data: {} });
    const e = expectError(await mg('DELETE', `/config-types/${ct}`), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    expect(e.cause).toMatchObject({ field: 'configTypeId', value: `[${cfg}]` });
  });
});

describe('COULD_NOT_VALIDATE where upstream says it', () => {
  it('a second external JWT signer with the same issuer (upstream keeps a unique index on issuer)', async () => {
    const id = await made('/external-jwt-signers', signer('iss-1', 'https://same-issuer.example.com'));
    const e = expectError(await mg('POST', '/external-jwt-signers', signer('iss-2', 'https://same-issuer.example.com')), 400, 'COULD_NOT_VALIDATE');
    expect(e.cause).toMatchObject({ field: 'issuer', value: 'https://same-issuer.example.com' });
    // The signer itself may be written again with its own issuer, and another moved onto it may not.
    expect((await mg('PATCH', `/external-jwt-signers/${id}`, { issuer: 'https://same-issuer.example.com', audience: 'other' })).status).toBe(200);
    const other = await made('/external-jwt-signers', { ...signer('iss-3', 'https://other-issuer.example.com'), jwksEndpoint: undefined, certPem: selfSignedCert('iss-3').certPem });
    expectError(await mg('PATCH', `/external-jwt-signers/${other}`, { issuer: 'https://same-issuer.example.com' }), 400, 'COULD_NOT_VALIDATE');
  });

  it('roles that are not roles or name nothing, an unknown config type, a schema that is no schema', async () => {
    const notRole = expectError(await mg('POST', '/service-policies', { name: 'sp-bad', type: 'Dial', semantic: 'AnyOf', identityRoles: ['staff'] }), 400, 'COULD_NOT_VALIDATE');
    expect(notRole.cause).toMatchObject({ field: 'identityRoles', reason: 'role entries must prefixed with # (to indicate role attributes) or @ (to indicate a name or id)' });
    expectError(await mg('POST', '/service-policies', { name: 'sp-bad', type: 'Dial', semantic: 'AnyOf', identityRoles: ['@nobody'] }), 400, 'COULD_NOT_VALIDATE');
    expectError(await mg('POST', '/configs', { name: 'c-bad', configTypeId: 'nope', data: {} }), 400, 'COULD_NOT_VALIDATE');
    const schema = expectError(await mg('POST', '/config-types', { name: 'ct-bad', schema: { type: 'nonsense' } }), 400, 'COULD_NOT_VALIDATE');
    expect(schema.cause.field).toBe('schema');
  });
});

describe('an enrollment for an identity that does not exist', () => {
  it('is 400 REFERENCED_ENTITY_NOT_FOUND, as upstream', async () => {
    const e = expectError(await mg('POST', '/enrollments', { method: 'ott', identityId: 'nope', expiresAt: new Date(Date.now() + 3_600_000).toISOString() }), 400, 'REFERENCED_ENTITY_NOT_FOUND');
    expect(e.cause).toMatchObject({ field: 'identityId', value: 'nope' });
  });
});

describe('external JWT signer updates from the CLI', () => {
  it('keep scopes and client id that `update ext-jwt-signer` sends as null', async () => {
    const id = await made('/external-jwt-signers', { ...signer('kept', 'https://kept.example.com'), clientId: 'cli', scopes: ['openid', 'email'] });
    expect((await mg('PATCH', `/external-jwt-signers/${id}`, { audience: 'other-aud', clientId: null, scopes: null })).status).toBe(200);
    expect((await mg('GET', `/external-jwt-signers/${id}`)).body.data).toMatchObject({ audience: 'other-aud', clientId: 'cli', scopes: ['email', 'openid'] });
  });
});

describe('JSON bodies end with a newline, as upstream writes them (`ziti edge ... -j` prints them as they come)', () => {
  it('details, lists (streamed or not), errors', async () => {
    for (const path of ['/identities', '/identities?limit=-1', '/auth-policies/default', '/identities/nope']) {
      const r = await mg('GET', path);
      expect(r.text.endsWith('}\n'), `${path}: ${JSON.stringify(r.text.slice(-5))}`).toBe(true);
    }
  });
});
