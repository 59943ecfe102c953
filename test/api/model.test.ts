// GET /export and POST /import (our extension): the model as a document with references by name and
// no ids or secrets; import makes another controller match it in one transaction, with a plan.
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCa } from '../helpers/certs.js';
import { expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

type Doc = Record<string, Record<string, unknown>[] | number>;

describe('model export and import', () => {
  let a: TestController;
  let b: TestController;
  let ta: string;
  let tb: string;
  const on = (c: TestController, token: string) => async (method: string, path: string, body?: unknown) => {
    const r = await c.call(method, `${MGMT}${path}`, { token, body });
    return r;
  };
  const made = async (c: TestController, token: string, path: string, body: unknown) => {
    const r = await on(c, token)('POST', path, body);
    expect(r.status, `${path}: ${r.text}`).toBe(201);
    return r.body.data.id as string;
  };
  const exported = async (c: TestController, token: string) => {
    const r = await on(c, token)('GET', '/export');
    expect(r.status).toBe(200);
    return r.body.data as Doc;
  };
  const count = async (c: TestController, token: string, path: string) => (await on(c, token)('GET', `${path}?limit=1`)).body.meta.pagination.totalCount as number;

  beforeAll(async () => {
    [a, b] = await Promise.all([startTestController(), startTestController()]);
    [ta, tb] = await Promise.all([a.login(), b.login()]);
    await made(a, ta, '/config-types', { name: 'web.v1', schema: { type: 'object', properties: { path: { type: 'string' } } } });
    await made(a, ta, '/configs', { name: 'web-paths', configTypeId: 'web.v1', data: { path: '/app' } });
    await made(a, ta, '/configs', { name: 'web-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['web.internal'], portRanges: [{ low: 443, high: 443 }] } });
    await made(a, ta, '/services', { name: 'web', encryptionRequired: true, configs: ['web-paths', 'web-intercept'], roleAttributes: ['public-apps'] });
    await made(a, ta, '/services', { name: 'ssh', encryptionRequired: false });
    await made(a, ta, '/posture-checks', { name: 'corp-domain', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['corp'] });
    const signer = await made(a, ta, '/external-jwt-signers', { name: 'idp', enabled: true, issuer: 'https://idp.example', audience: 'ztc', jwksEndpoint: 'https://idp.example/jwks' });
    const idpOnly = await made(a, ta, '/auth-policies', {
      name: 'idp-only',
      primary: { cert: { allowed: false, allowExpiredCerts: false }, extJwt: { allowed: true, allowedSigners: [signer] }, updb: { allowed: false, maxAttempts: 0, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false, lockoutDurationMinutes: 0 } },
      secondary: { requireTotp: false },
    });
    await made(a, ta, '/cas', { name: 'partner', certPem: new TestCa('partner').pem, identityRoles: ['partner'], isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: false, isAuthEnabled: true });
    const ssh = (await on(a, ta)('GET', `/services?filter=${encodeURIComponent('name = "ssh"')}`)).body.data[0].id;
    await made(a, ta, '/identities', { name: 'laptop-01', type: 'Device', isAdmin: false, roleAttributes: ['staff'], authPolicyId: idpOnly, externalId: 'ana@idp' });
    await made(a, ta, '/identities', { name: 'server-01', type: 'Device', isAdmin: false, serviceHostingCosts: { [ssh]: 10 } });
    await made(a, ta, '/edge-routers', { name: 'er-1', roleAttributes: ['public'], isTunnelerEnabled: true });
    await made(a, ta, '/transit-routers', { name: 'tr-1', cost: 5 });
    await made(a, ta, '/edge-router-policies', { name: 'staff-routers', semantic: 'AnyOf', identityRoles: ['#staff', '@server-01'], edgeRouterRoles: ['@er-1'] });
    await made(a, ta, '/service-edge-router-policies', { name: 'web-routers', semantic: 'AnyOf', serviceRoles: ['@web'], edgeRouterRoles: ['#public'] });
    await made(a, ta, '/service-policies', { name: 'web-dial', type: 'Dial', semantic: 'AllOf', identityRoles: ['@laptop-01'], serviceRoles: ['@web'], postureCheckRoles: ['@corp-domain'] });
  });
  afterAll(() => Promise.all([a.close(), b.close()]));

  it('exports every kind with references by name, and no ids or secrets', async () => {
    const doc = await exported(a, ta);
    const text = JSON.stringify(doc);
    expect(text).not.toMatch(/"id"|"_links"|"password"|"jwt"|"token"/);
    const one = (kind: string, name: string) => (doc[kind] as Record<string, unknown>[]).find((x) => x.name === name)!;
    expect(one('configs', 'web-paths')).toMatchObject({ configType: 'web.v1', data: { path: '/app' } });
    expect((one('services', 'web').configs as string[]).sort()).toEqual(['web-intercept', 'web-paths']);
    expect(one('identities', 'laptop-01')).toMatchObject({ type: 'Default', authPolicy: 'idp-only', roleAttributes: ['staff'] });
    expect(one('identities', 'server-01').serviceHostingCosts).toEqual({ ssh: 10 });
    expect(one('authPolicies', 'idp-only')).toMatchObject({ primary: { extJwt: { allowedSigners: ['idp'] } } });
    expect(one('servicePolicies', 'web-dial')).toMatchObject({ identityRoles: ['@laptop-01'], serviceRoles: ['@web'], postureCheckRoles: ['@corp-domain'] });
    expect(one('edgeRouterPolicies', 'staff-routers').edgeRouterRoles).toEqual(['@er-1']);
    // System entities stay out: the default admin, the default auth policy, built-in config types.
    expect((doc.identities as { name: string }[]).map((i) => i.name)).toEqual(['laptop-01', 'server-01']);
    expect((doc.authPolicies as { name: string }[]).map((i) => i.name)).toEqual(['idp-only']);
    expect((doc.configTypes as { name: string }[]).map((i) => i.name)).toEqual(['web.v1']);
    // The same document as YAML (what ztc export writes), streamed a page at a time.
    const yaml = await a.call('GET', `${MGMT}/export`, { token: ta, headers: { accept: 'application/yaml' } });
    expect(yaml.status).toBe(200);
    expect(yaml.headers['content-type']).toMatch(/^application\/yaml/);
    expect(YAML.parse(yaml.text)).toEqual(doc);
    expect(yaml.text).toMatch(/^transitRouters:\n- name: tr-1$/m);
  });

  it('imports into an empty controller, and exporting that gives the same document', async () => {
    const doc = await exported(a, ta);
    const dry = await on(b, tb)('POST', '/import?dryRun=true', doc);
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body.data.applied).toBe(false);
    expect(await count(b, tb, '/services')).toBe(0);
    const r = await on(b, tb)('POST', '/import', doc);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.applied).toBe(true);
    expect(r.body.data.plan.every((s: { action: string }) => s.action === 'create')).toBe(true);
    expect(r.body.data.plan).toHaveLength(Object.values(doc).filter(Array.isArray).flat().length);
    expect(await exported(b, tb)).toEqual(doc);
    // Again: nothing to do.
    const again = await on(b, tb)('POST', '/import', doc);
    expect(again.body.data).toEqual({ plan: [], applied: false });
  });

  it('updates what differs, deletes with prune only, and says so in the plan', async () => {
    const doc = await exported(b, tb);
    const ids = doc.identities as Record<string, unknown>[];
    ids.find((i) => i.name === 'laptop-01')!.roleAttributes = ['staff', 'eu'];
    doc.services = (doc.services as Record<string, unknown>[]).filter((s) => s.name !== 'ssh');
    (doc.identities as Record<string, unknown>[]).find((i) => i.name === 'server-01')!.serviceHostingCosts = {};
    const kept = await on(b, tb)('POST', '/import', doc);
    expect(kept.body.data.plan).toEqual([
      { action: 'update', kind: 'identities', name: 'laptop-01', changes: [{ field: 'roleAttributes', from: ['staff'], to: ['staff', 'eu'] }] },
      { action: 'update', kind: 'identities', name: 'server-01', changes: [{ field: 'serviceHostingCosts', from: { ssh: 10 }, to: {} }] },
    ]);
    expect(await count(b, tb, '/services')).toBe(2);
    const laptop = (await on(b, tb)('GET', `/identities?filter=${encodeURIComponent('name = "laptop-01"')}`)).body.data[0];
    expect(laptop.roleAttributes).toEqual(['eu', 'staff']);
    expect(laptop.authPolicyId).not.toBe('default');

    const dry = await on(b, tb)('POST', '/import?prune=true&dryRun=true', doc);
    expect(dry.body.data).toEqual({ plan: [{ action: 'delete', kind: 'services', name: 'ssh' }], applied: false });
    expect(await count(b, tb, '/services')).toBe(2);
    const pruned = await on(b, tb)('POST', '/import?prune=true', doc);
    expect(pruned.body.data.applied).toBe(true);
    expect(await count(b, tb, '/services')).toBe(1);
    // The default admin and other system entities survive a prune.
    expect((await b.login()).length).toBeGreaterThan(0);
  });

  it('refuses a bad document with what is wrong, and writes nothing of it', async () => {
    const before = await count(b, tb, '/identities');
    expect(expectError(await on(b, tb)('POST', '/import', { gadgets: [{ name: 'x' }] }), 400).message).toMatch(/'gadgets'/);
    const field = await on(b, tb)('POST', '/import', { identities: [{ name: 'n1', type: 'User', isAdmin: false, colour: 'red' }] });
    expect(expectError(field, 400).message).toMatch(/identities\[0\] 'n1': 'colour' is not a field/);
    // A good identity first, then one naming an auth policy that does not exist: neither is written.
    const partial = await on(b, tb)('POST', '/import', { identities: [{ name: 'fine', type: 'User', isAdmin: false }, { name: 'bad', type: 'User', isAdmin: false, authPolicy: 'nope' }] });
    expect(expectError(partial, 400).message).toMatch(/no auth policy is named 'nope'/);
    const missing = await on(b, tb)('POST', '/import', { identities: [{ name: 'no-type' }] });
    expect(expectError(missing, 400).message).toMatch(/no-type.*type/);
    const twice = await on(b, tb)('POST', '/import', { services: [{ name: 'x', encryptionRequired: true }, { name: 'x', encryptionRequired: true }] });
    expect(expectError(twice, 400).message).toMatch(/appears twice/);
    expect(await count(b, tb, '/identities')).toBe(before);
    // Only admins.
    const uid = await b.user('plain');
    expect(uid).toBeTruthy();
    const plain = await b.login('plain', 'password1');
    expect((await b.call('GET', `${MGMT}/export`, { token: plain })).status).toBe(401);
  });
});
