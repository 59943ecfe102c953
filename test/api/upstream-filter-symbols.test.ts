// Filter field names as upstream names them: its store's public symbols (filter-symbols.md, read from
// the controller that served API 0.26.28), with upstream's meaning; the names we accepted before stay
// as aliases, and meta.filterableFields answers upstream's names only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';
import { ecCsr } from '../helpers/certs.js';

let c: TestController;
let admin: string;
const id: Record<string, string> = {};
const BASE = ['id', 'createdAt', 'updatedAt', 'isSystem', 'tags'];

const call = (method: string, url: string, body?: unknown) => c.call(method, url, { token: admin, body });
const created = async (url: string, body: unknown) => {
  const r = await call('POST', url, body);
  if (r.status !== 201) throw new Error(`${url}: ${r.text}`);
  return r.body.data.id as string;
};
const filter = async (path: string, f: string, token = admin) => {
  const r = await c.call('GET', `${path}${path.includes('?') ? '&' : '?'}filter=${encodeURIComponent(f)}&limit=-1`, { token });
  if (r.status !== 200) throw new Error(`${path} ${f}: ${r.status} ${r.text}`);
  return r.body.data.map((d: { id: string }) => d.id) as string[];
};

beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  id.ana = await c.user('ana-user', { password: 'password1' });
  id.bo = await c.user('bo-user', { password: 'password1' });
  id.anaSession = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'ana-user', password: 'password1' } })).body.data.id;
  id.enrollment = await created(`${MGMT}/enrollments`, { identityId: id.bo, method: 'ott', expiresAt: new Date(Date.now() + 3600_000).toISOString() });
  const types = (await call('GET', `${MGMT}/config-types?filter=${encodeURIComponent('name = "intercept.v1"')}`)).body.data;
  id.interceptType = types[0].id;
  id.config = await created(`${MGMT}/configs`, { name: 'web-intercept', configTypeId: id.interceptType, data: { protocols: ['tcp'], addresses: ['web.internal'], portRanges: [{ low: 443, high: 443 }] } });
  id.web = await created(`${MGMT}/services`, { name: 'web', encryptionRequired: true, configs: [id.config] });
  id.db = await created(`${MGMT}/services`, { name: 'db', encryptionRequired: true });
  id.router = await created(`${MGMT}/edge-routers`, { name: 'er-1', isTunnelerEnabled: false, roleAttributes: ['public'] });
  id.dial = await created(`${MGMT}/service-policies`, { name: 'ana-dials-web', type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${id.ana}`], serviceRoles: [`@${id.web}`] });
  id.bind = await created(`${MGMT}/service-policies`, { name: 'bo-binds-db', type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${id.bo}`], serviceRoles: [`@${id.db}`] });
  await created(`${MGMT}/edge-router-policies`, { name: 'all-routers', semantic: 'AnyOf', identityRoles: ['#all'], edgeRouterRoles: ['#all'] });
  await created(`${MGMT}/service-edge-router-policies`, { name: 'all-serp', semantic: 'AnyOf', serviceRoles: ['#all'], edgeRouterRoles: ['#all'] });
  id.terminator = await created(`${MGMT}/terminators`, { service: id.web, router: id.router, binding: 'transport', address: 'tcp:10.0.0.5:443' });
  const anaToken = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'ana-user', password: 'password1' } })).body.data.token;
  id.anaToken = anaToken;
  const s = await c.call('POST', `${CLIENT}/sessions`, { token: anaToken, body: { serviceId: id.web, type: 'Dial' } });
  if (s.status !== 201) throw new Error(s.text);
  id.session = s.body.data.id;
  id.sessionToken = s.body.data.token;
  id.anaSession2 = (await c.call('GET', `${CLIENT}/current-api-session`, { token: anaToken })).body.data.id;
}, 120_000);
afterAll(() => c.close());

describe('meta.filterableFields answers upstream’s symbol names', () => {
  // Upstream's public symbols per list; ours must match exactly (order aside). Authenticators' updbPassword and
  // updbSalt are left out on purpose: password hashes are not made searchable here (docs/security.md).
  const expected: Record<string, string[]> = {
    identities: ['name', 'roleAttributes', 'externalId', 'type', 'authPolicyId', 'isAdmin', 'isDefaultAdmin'],
    'identity-types': ['name'],
    // The last five are 2.x's symbols (authenticator_store.go) of the extension-request fields.
    authenticators: ['method', 'identity', 'certFingerprint', 'certPem', 'isIssuedByNetwork', 'updbUsername', 'isExtendRequested', 'isKeyRollRequested', 'extendRequestedAt', 'lastExtendRolledKeys', 'lastAuthResolvedToRoot'],
    enrollments: ['token', 'identity', 'edgeRouter', 'transitRouter', 'caId'],
    'api-sessions': ['token', 'identity', 'authenticator', 'ipAddress', 'lastActivityAt'],
    sessions: ['token', 'apiSession', 'service', 'type'],
    services: ['name', 'terminatorStrategy', 'roleAttributes', 'configs'],
    configs: ['name', 'type'],
    // target is 2.1's symbol (config_type_store.go) of the field ztc stores since.
    'config-types': ['name', 'schema', 'target'],
    // The last is ztc's own (routers that enroll themselves, ziti#1390): a CA's flag is found as upstream's are.
    cas: ['name', 'fingerprint', 'isVerified', 'verificationToken', 'isAutoCaEnrollmentEnabled', 'isOttCaEnrollmentEnabled', 'isAuthEnabled', 'isEdgeRouterEnrollmentEnabled'],
    'edge-routers': ['name', 'fingerprint', 'cost', 'noTraversal', 'disabled', 'isVerified', 'isTunnelerEnabled', 'roleAttributes', 'connected', 'online'],
    'transit-routers': ['name', 'fingerprint', 'cost', 'noTraversal', 'disabled'],
    routers: ['name', 'fingerprint', 'cost', 'noTraversal', 'disabled'],
    terminators: ['service', 'router', 'service.name', 'router.name', 'binding', 'address', 'instanceId', 'hostId'],
    'posture-checks': ['name', 'promptOnUnlock', 'promptOnWake'],
    'posture-check-types': ['name'],
    'auth-policies': [
      'name', 'primary.cert.allowed', 'primary.cert.allowExpiredCerts', 'primary.updb.allowed', 'primary.updb.minPasswordLength',
      'primary.updb.requireSpecialChar', 'primary.updb.requireNumberChar', 'primary.updb.requireMixedCase', 'primary.updb.maxAttempts',
      'primary.extJwt.allowed', 'secondary.requireTotp', 'secondary.requireExtJwtSigner',
    ],
    // The last six are 2.x's symbols (external_jwt_signer_store.go) of the fields ztc stores since.
    'external-jwt-signers': ['name', 'fingerprint', 'kid', 'issuer', 'certPem', 'commonName', 'claimsProperty', 'audience', 'clientId', 'scopes', 'notAfter', 'notBefore', 'enabled', 'useExternalId', 'targetToken', 'enrollNameClaimsSelector', 'enrollAttributeClaimsSelector', 'enrollToCertEnabled', 'enrollToTokenEnabled', 'enrollAuthPolicyId'],
    'service-policies': ['name', 'type', 'semantic', 'identityRoles', 'serviceRoles', 'postureCheckRoles', 'identities', 'services'],
    'edge-router-policies': ['name', 'semantic', 'identityRoles', 'edgeRouterRoles'],
    'service-edge-router-policies': ['name', 'semantic', 'serviceRoles', 'edgeRouterRoles'],
    controllers: ['name', 'ctrlAddress', 'certPem', 'fingerprint', 'isOnline', 'lastJoinedAt'],
  };
  for (const [plural, fields] of Object.entries(expected)) {
    it(plural, async () => {
      const r = await call('GET', `${MGMT}/${plural}?limit=1`);
      expect(r.status).toBe(200);
      expect([...r.body.meta.filterableFields].sort()).toEqual([...BASE, ...fields].sort());
    });
  }
  it('the client API’s lists too', async () => {
    expect([...(await c.call('GET', `${CLIENT}/current-api-session/certificates`, { token: id.anaToken })).body.meta.filterableFields].sort()).toEqual([...BASE, 'apiSession', 'subject', 'fingerprint'].sort());
    expect([...(await c.call('GET', `${CLIENT}/sessions`, { token: id.anaToken })).body.meta.filterableFields].sort()).toEqual([...BASE, 'token', 'apiSession', 'service', 'type'].sort());
  });
});

describe('upstream’s symbols filter with upstream’s meaning', () => {
  it('`identity` on authenticators, enrollments and API sessions (not only identityId)', async () => {
    const auths = await filter(`${MGMT}/authenticators`, `identity = "${id.ana}"`);
    expect(auths).toHaveLength(1);
    expect(await filter(`${MGMT}/authenticators`, `identityId = "${id.ana}"`)).toEqual(auths);
    expect(await filter(`${MGMT}/authenticators`, 'updbUsername = "ana-user"')).toEqual(auths);
    expect(await filter(`${MGMT}/authenticators`, 'method = "updb" and certFingerprint = null and identity = "nobody"')).toEqual([]);
    expect(await filter(`${MGMT}/enrollments`, `identity = "${id.bo}"`)).toEqual([id.enrollment]);
    expect(await filter(`${MGMT}/enrollments`, `identity = "${id.ana}"`)).toEqual([]);
    const sessions = await filter(`${MGMT}/api-sessions`, `identity = "${id.ana}"`);
    expect(sessions.sort()).toEqual([id.anaSession, id.anaSession2].sort());
  });

  it('`service`, `apiSession` and `token` on sessions; tokens compare by value though stored hashed', async () => {
    expect(await filter(`${MGMT}/sessions`, `service = "${id.web}"`)).toEqual([id.session]);
    expect(await filter(`${MGMT}/sessions`, `service = "${id.db}"`)).toEqual([]);
    expect(await filter(`${MGMT}/sessions`, `apiSession = "${id.anaSession2}"`)).toEqual([id.session]);
    expect(await filter(`${MGMT}/sessions`, `token = "${id.sessionToken}"`)).toEqual([id.session]);
    expect(await filter(`${MGMT}/sessions`, `token in ["nope", "${id.sessionToken}"]`)).toEqual([id.session]);
    expect(await filter(`${MGMT}/api-sessions`, `token = "${id.anaToken}"`)).toEqual([id.anaSession2]);
    expectError(await call('GET', `${MGMT}/sessions?filter=${encodeURIComponent('token contains "a"')}`), 400, 'INVALID_FILTER');
    expect(await filter(`${CLIENT}/sessions`, `service = "${id.web}"`, id.anaToken)).toEqual([id.session]);
  });

  it('`type` on configs and identities; `configs` on services; the policies’ resolved members', async () => {
    expect(await filter(`${MGMT}/configs`, `type = "${id.interceptType}"`)).toEqual([id.config]);
    expect(await filter(`${MGMT}/identities`, 'type = "Default" and name contains "-user"')).toHaveLength(2);
    expect(await filter(`${MGMT}/services`, `anyOf(configs) = "${id.config}"`)).toEqual([id.web]);
    expect(await filter(`${MGMT}/services`, 'isEmpty(configs) and name = "db"')).toEqual([id.db]);
    expect(await filter(`${MGMT}/service-policies`, `anyOf(identities) = "${id.ana}"`)).toEqual([id.dial]);
    expect(await filter(`${MGMT}/service-policies`, `anyOf(services) = "${id.db}"`)).toEqual([id.bind]);
  });

  it('a service policy’s type as upstream encodes it: 1 Dial, 2 Bind (the names work too)', async () => {
    expect(await filter(`${MGMT}/service-policies`, 'type = 1')).toEqual([id.dial]);
    expect(await filter(`${MGMT}/service-policies`, 'type = 2')).toEqual([id.bind]);
    expect(await filter(`${MGMT}/service-policies`, 'type = "Bind"')).toEqual([id.bind]);
    const sorted = await filter(`${MGMT}/service-policies`, 'true sort by type desc');
    expect(sorted).toEqual([id.bind, id.dial]);
  });

  it('`online` and `connected` on edge routers; terminators by `service.name` and `router.name` (joins)', async () => {
    expect(await filter(`${MGMT}/edge-routers`, 'online = false and connected = false')).toEqual([id.router]);
    expect(await filter(`${MGMT}/edge-routers`, 'online = true')).toEqual([]);
    expect(await filter(`${MGMT}/terminators`, 'service.name = "web" and router.name contains "er-"')).toEqual([id.terminator]);
    expect(await filter(`${MGMT}/terminators`, 'service.name = "db"')).toEqual([]);
    expect(await filter(`${MGMT}/terminators`, `instanceId = "" and hostId = null and service = "${id.web}"`)).toEqual([id.terminator]);
  });

  it('auth policies by the paths into their settings; posture checks by their MFA prompts', async () => {
    const def = await filter(`${MGMT}/auth-policies`, 'primary.updb.allowed = true and primary.updb.minPasswordLength >= 5 and secondary.requireTotp = false');
    expect(def).toEqual(['default']);
    expect(await filter(`${MGMT}/auth-policies`, 'secondary.requireTotp = true')).toEqual([]);
    expect(await filter(`${MGMT}/auth-policies`, 'isSystem = true')).toEqual(['default']);
    const mfa = await created(`${MGMT}/posture-checks`, { name: 'mfa-wake', typeId: 'MFA', promptOnWake: true, promptOnUnlock: false });
    expect(await filter(`${MGMT}/posture-checks`, 'promptOnWake = true')).toEqual([mfa]);
    expect(await filter(`${MGMT}/posture-checks`, 'promptOnUnlock = true')).toEqual([]);
  });

  it('isSystem on every list; tags.<key> on every list', async () => {
    expect(await filter(`${MGMT}/services`, 'isSystem = false and name = "web"')).toEqual([id.web]);
    await call('PATCH', `${MGMT}/services/${id.db}`, { tags: { env: 'prod' } });
    expect(await filter(`${MGMT}/services`, 'tags.env = "prod"')).toEqual([id.db]);
  });

  it('where upstream answers 500 (a sort on a set or a dotted name) we answer 400 with the envelope', async () => {
    for (const [path, sort] of [['services', 'roleAttributes'], ['terminators', 'service.name'], ['identities', 'tags.env'], ['service-policies', 'identities']]) {
      expectError(await call('GET', `${MGMT}/${path}?filter=${encodeURIComponent(`true sort by ${sort}`)}`), 400, 'INVALID_FILTER');
    }
    expectError(await call('GET', `${MGMT}/identities?filter=${encodeURIComponent('colour = "red"')}`), 400, 'INVALID_FILTER');
  });
});

describe('client API certificate list', () => {
  it('filters by the API session it belongs to', async () => {
    const { csrPem } = ecCsr('ana-session');
    const r = await c.call('POST', `${CLIENT}/current-api-session/certificates`, { token: id.anaToken, body: { csr: csrPem } });
    expect(r.status).toBe(201);
    expect(await filter(`${CLIENT}/current-api-session/certificates`, `apiSession = "${id.anaSession2}"`, id.anaToken)).toEqual([r.body.data.id]);
  });
});
