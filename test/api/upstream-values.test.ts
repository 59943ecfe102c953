// Values as upstream's 1.1.10 controller writes them (read from its source, where its own CLI and
// generated clients depend on them): unset optional strings are null (or absent where its model says
// omitempty), never ""; the served document says they may be null; every validation error's cause
// carries field, reason and a value (a string, as upstream's %v, "<nil>" when there is none); MAC
// addresses are bare lower-case hex; lists upstream keeps as sets come back sorted without repeats.
import { describe, expect, it } from 'vitest';
import { selfSignedCert } from '../helpers/certs.js';
import { CLIENT, controllerForFile, expectError, MGMT } from '../helpers/controller.js';

const file = controllerForFile();

const mg = file.mgmt;
const made = file.created;

type Schema = { type?: string | string[]; anyOf?: Schema[]; oneOf?: Schema[]; properties?: Record<string, Schema>; required?: string[]; nullable?: boolean; allOf?: Schema[] };
const mayBeNull = (s: Schema | undefined): boolean =>
  !!s && (s.nullable === true || s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null')) || !!s.anyOf?.some(mayBeNull) || !!s.oneOf?.some(mayBeNull));
let served: { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: Schema }> }> }>> } | undefined;
/** The `data` schema the served management document declares for GET on a path. */
async function servedData(path: string): Promise<Schema> {
  served ??= JSON.parse((await mg('GET', '/specs/edge-management/spec')).body.data);
  const schema = served!.paths[`${MGMT}${path}`]!.get!.responses['200']!.content!['application/json']!.schema;
  return schema.properties!.data!;
}

describe('unset optional strings', () => {
  it('are null on an external JWT signer, as upstream (its CLI reads "" as a JWKS signer without a fingerprint)', async () => {
    const jwks = await made('/external-jwt-signers', { name: 'jwks-signer', enabled: true, issuer: 'https://idp.example.com', audience: 'ztc', jwksEndpoint: 'https://idp.example.com/keys' });
    const d = (await mg('GET', `/external-jwt-signers/${jwks}`)).body.data;
    expect(d).toMatchObject({ fingerprint: null, kid: null, clientId: null, externalAuthUrl: null, certPem: null, jwksEndpoint: 'https://idp.example.com/keys' });
    // A plain string upstream: empty without a certificate, and the dates are Go's zero time.
    expect(d).toMatchObject({ commonName: '', notBefore: '0001-01-01T00:00:00.000Z', notAfter: '0001-01-01T00:00:00.000Z' });

    const cert = await made('/external-jwt-signers', { name: 'cert-signer', enabled: true, issuer: 'https://idp2.example.com', audience: null, certPem: selfSignedCert('signer-cn').certPem, kid: '' });
    const e = (await mg('GET', `/external-jwt-signers/${cert}`)).body.data;
    expect(e).toMatchObject({ jwksEndpoint: null, audience: null, kid: null, commonName: 'signer-cn' });
    expect(e.fingerprint).toMatch(/^[0-9a-f]{40}$/);

    // The client API's view of the same signers.
    const client = (await file.c.call('GET', `${CLIENT}/external-jwt-signers`)).body.data as { name: string; clientId: unknown; externalAuthUrl: unknown }[];
    // externalAuthUrl null as upstream's client API shows it; an unset clientId left out there (omitempty).
    expect(client.find((s) => s.name === 'jwks-signer')).toMatchObject({ externalAuthUrl: null });
    expect(client.find((s) => s.name === 'jwks-signer')).not.toHaveProperty('clientId');
  });

  it('and the served document says those fields may be null, for generated clients', async () => {
    const detail = await servedData('/external-jwt-signers/{id}');
    for (const f of ['fingerprint', 'kid', 'clientId', 'externalAuthUrl', 'certPem', 'jwksEndpoint', 'audience', 'claimsProperty']) expect(mayBeNull(detail.properties![f]), f).toBe(true);
    expect(mayBeNull(detail.properties!.name)).toBe(false);
    expect(mayBeNull(detail.properties!.commonName)).toBe(false);
    expect(mayBeNull((await servedData('/transit-routers/{id}')).properties!.fingerprint)).toBe(true);
    const edge = await servedData('/edge-routers/{id}');
    expect(edge.required ?? []).not.toContain('fingerprint');
  });

  it('leave a router\'s fingerprint null (transit) or out (edge, as upstream\'s omitempty) until it enrolls', async () => {
    const er = await made('/edge-routers', { name: 'er-unenrolled' });
    const detail = (await mg('GET', `/edge-routers/${er}`)).body.data;
    expect(detail).not.toHaveProperty('fingerprint');
    expect(detail.isVerified).toBe(false);
    const listed = (await mg('GET', '/edge-routers?filter=name%3D%22er-unenrolled%22')).body.data[0];
    expect(listed).not.toHaveProperty('fingerprint');
    const tr = await made('/transit-routers', { name: 'tr-unenrolled' });
    expect((await mg('GET', `/transit-routers/${tr}`)).body.data.fingerprint).toBeNull();
    expect((await mg('GET', `/routers/${tr}`)).body.data.fingerprint).toBeNull();
  });
});

describe('error causes', () => {
  it('carry field, reason and value as a string, "<nil>" for a missing value', async () => {
    // A body that breaks the route's schema (a value of the wrong JSON type: upstream's decoder refuses it).
    const typed = expectError(await mg('POST', '/services', { name: 'svc-typed', encryptionRequired: 'yes' }), 400, 'COULD_NOT_PARSE_BODY');
    expect(typed.cause).toEqual({ field: 'encryptionRequired', reason: expect.any(String), value: 'yes' });
    const missing = expectError(await mg('POST', '/services', { encryptionRequired: true }), 400, 'COULD_NOT_VALIDATE');
    expect(missing.cause).toEqual({ field: 'name', reason: 'is required', value: '<nil>' });
    // A number and an object render as Go's %v renders them.
    const port = expectError(await mg('POST', '/configs', { name: 'bad-port', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'x', port: 70000 } }), 400, 'COULD_NOT_VALIDATE');
    expect(port.cause).toMatchObject({ field: 'port', value: '70000' });
    const range = expectError(await mg('POST', '/configs', { name: 'bad-range', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['x'], portRanges: [{ low: 1, high: 2, step: 1 }] } }), 400);
    expect(range.cause).toMatchObject({ field: 'portRanges.0.step', value: '1' });
    const list = expectError(await mg('POST', '/configs', { name: 'bad-list', configTypeId: 'intercept.v1', data: { protocols: ['tcp', 'tcp'], addresses: ['x'], portRanges: [{ low: 1, high: 2 }] } }), 400);
    expect(list.cause).toMatchObject({ field: 'protocols', value: '[tcp tcp]' });
    // A rule checked by the model rather than the schema.
    const unknown = expectError(await mg('POST', '/services', { name: 'svc-cfg', encryptionRequired: true, configs: ['no-such-config'] }), 400);
    expect(unknown.cause).toMatchObject({ field: 'configs', value: 'no-such-config' });
    const notUrl = expectError(await mg('POST', '/external-jwt-signers', { name: 'bad-url', enabled: true, issuer: 'https://x.example.com', audience: 'a', jwksEndpoint: 'not a url' }), 400);
    expect(notUrl.cause).toMatchObject({ field: 'jwksEndpoint', value: 'not a url' });
    // Secrets sent in a refused field are not echoed back.
    const id = await made('/identities', { name: 'pw-echo', type: 'Default', isAdmin: false });
    const pw = expectError(await mg('POST', '/authenticators', { identityId: id, method: 'updb', username: 'pw-echo', password: 7 }), 400);
    expect(pw.cause.field).toBe('password');
    expect(pw.cause.value).toBe('<hidden>');
  });
});

describe('values upstream normalises', () => {
  it('MAC addresses: bare lower-case hex, without repeats, sorted, in checks and in posture data', async () => {
    const check = await made('/posture-checks', { name: 'macs', typeId: 'MAC', macAddresses: ['AA:BB:CC:DD:EE:FF', 'aa-bb-cc-00-11-22', 'aabb.ccdd.eeff'] });
    expect((await mg('GET', `/posture-checks/${check}`)).body.data.macAddresses).toEqual(['aabbcc001122', 'aabbccddeeff']);
    expect((await mg('PATCH', `/posture-checks/${check}`, { typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] })).status).toBe(200);
    expect((await mg('GET', `/posture-checks/${check}`)).body.data.macAddresses).toEqual(['001122334455']);

    const me = (await file.c.call('GET', `${CLIENT}/current-identity`, { token: file.admin })).body.data.id;
    const r = await file.c.call('POST', `${CLIENT}/posture-response`, { token: file.admin, body: { id: check, typeId: 'MAC', macAddresses: ['00:11:22:33:44:55', 'DE-AD-BE-EF-00-01'] } });
    expect(r.status, r.text).toBe(201);
    expect((await mg('GET', `/identities/${me}/posture-data`)).body.data.mac.addresses).toEqual(['001122334455', 'deadbeef0001']);
  });

  it('other set-valued check fields: domains, OS versions, process hashes (lower case)', async () => {
    const dom = await made('/posture-checks', { name: 'doms', typeId: 'DOMAIN', domains: ['b.example', 'a.example', 'b.example'] });
    expect((await mg('GET', `/posture-checks/${dom}`)).body.data.domains).toEqual(['a.example', 'b.example']);
    const os = await made('/posture-checks', { name: 'oses', typeId: 'OS', operatingSystems: [{ type: 'Windows', versions: ['>=10.0.19041', '10'] }] });
    expect((await mg('GET', `/posture-checks/${os}`)).body.data.operatingSystems[0].versions).toEqual(['10', '>=10.0.19041']);
    const proc = await made('/posture-checks', { name: 'proc', typeId: 'PROCESS', process: { osType: 'Linux', path: '/usr/bin/agent', hashes: ['FF00', 'AB12'], signerFingerprint: 'ABCDEF' } });
    expect((await mg('GET', `/posture-checks/${proc}`)).body.data.process).toMatchObject({ hashes: ['ab12', 'ff00'], signerFingerprint: 'abcdef' });
  });

  it('external JWT signer scopes and a service\'s configs come back as upstream orders them', async () => {
    const signer = await made('/external-jwt-signers', { name: 'scoped', enabled: true, issuer: 'https://scoped.example.com', audience: 'a', jwksEndpoint: 'https://scoped.example.com/keys', scopes: ['profile', 'openid', 'email', 'openid'] });
    expect((await mg('GET', `/external-jwt-signers/${signer}`)).body.data.scopes).toEqual(['email', 'openid', 'profile']);
    // Upstream 1.1.10 reads an empty set back as null: none given, [] given, or emptied by a patch.
    const none = await made('/external-jwt-signers', { name: 'unscoped', enabled: true, issuer: 'https://unscoped.example.com', audience: 'a', jwksEndpoint: 'https://unscoped.example.com/keys' });
    const empty = await made('/external-jwt-signers', { name: 'empty-scopes', enabled: true, issuer: 'https://empty.example.com', audience: 'a', jwksEndpoint: 'https://empty.example.com/keys', scopes: [] });
    expect((await mg('PATCH', `/external-jwt-signers/${signer}`, { scopes: [] })).status).toBe(200);
    for (const id of [none, empty, signer]) expect((await mg('GET', `/external-jwt-signers/${id}`)).body.data.scopes, id).toBeNull();
    // The client API shows the same null, and leaves an unset clientId out (upstream's omitempty there).
    const pub = (await file.c.call('GET', `${CLIENT}/external-jwt-signers?filter=${encodeURIComponent('name = "unscoped"')}`)).body.data[0];
    expect(pub.scopes).toBeNull();
    expect(pub).not.toHaveProperty('clientId');

    const ids: string[] = [];
    ids.push(await made('/configs', { name: 'order-host', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'x', port: 1 } }));
    ids.push(await made('/configs', { name: 'order-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['x'], portRanges: [{ low: 1, high: 1 }] } }));
    ids.push(await made('/configs', { name: 'order-client', configTypeId: 'ziti-tunneler-client.v1', data: { hostname: 'x', port: 1 } }));
    const byId = [...ids].sort();
    for (const given of [byId, [...byId].reverse()]) {
      const svc = await made('/services', { name: `ordered-${given[0]}`, encryptionRequired: true, configs: given });
      expect((await mg('GET', `/services/${svc}`)).body.data.configs).toEqual(byId);
    }
  });
});
