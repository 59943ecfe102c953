// 2.1's role-attribute usage lists (GET /identity-role-attribute-usage, /edge-router-role-attribute-usage,
// /service-role-attribute-usage, /posture-check-role-attribute-usage): every attribute of a kind that an
// entity carries or a policy names, with per-source counts (and ids with withIds=true). Runs on SQLite and,
// under scripts/with-postgres.sh, on PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });
const made = async (path: string, body: unknown) => {
  const r = await mg('POST', path, body);
  if (r.status !== 201) throw new Error(`${path}: ${r.status} ${r.text}`);
  return r.body.data.id as string;
};
type Usage = { roleAttribute: string; usage: Record<string, { count: number; ids?: string[] }> };
const usage = async (kind: string, filter: string, withIds = false) => {
  const r = await mg('GET', `/${kind}-role-attribute-usage?filter=${encodeURIComponent(filter)}${withIds ? '&withIds=true' : ''}`);
  expect(r.status, r.text).toBe(200);
  return r.body as { data: Usage[]; meta: { pagination: { totalCount: number; limit: number; offset: number }; filterableFields: string[] } };
};
const counts = (rows: Usage[]) => Object.fromEntries(rows.map((r) => [r.roleAttribute, Object.fromEntries(Object.entries(r.usage).map(([k, v]) => [k, v.count]))]));

beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

describe('role attribute usage', () => {
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    ids.i1 = await made('/identities', { name: 'rau-i1', type: 'User', isAdmin: false, roleAttributes: ['rau-both', 'rau-id-only'] });
    ids.i2 = await made('/identities', { name: 'rau-i2', type: 'User', isAdmin: false, roleAttributes: ['rau-both'] });
    ids.s1 = await made('/services', { name: 'rau-s1', encryptionRequired: true, roleAttributes: ['rau-svc', 'rau-both'] });
    ids.r1 = await made('/edge-routers', { name: 'rau-r1', roleAttributes: ['rau-er'] });
    ids.pc1 = await made('/posture-checks', { name: 'rau-pc1', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['rau-pc'] });
    // Service policies: identities by #rau-both and #rau-sp-only (and #all, @id: neither is an attribute), services, posture checks.
    ids.sp1 = await made('/service-policies', { name: 'rau-sp1', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#rau-both', '#rau-sp-only', `@${ids.i1}`], serviceRoles: ['#rau-svc'], postureCheckRoles: ['#rau-pc'] });
    ids.sp2 = await made('/service-policies', { name: 'rau-sp2', type: 'Bind', semantic: 'AnyOf', identityRoles: ['#rau-sp-only'], serviceRoles: ['#all'], postureCheckRoles: ['#rau-pc-ref'] });
    await made('/service-policies', { name: 'rau-sp3', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#all'], serviceRoles: ['#all'] });
    ids.erp = await made('/edge-router-policies', { name: 'rau-erp', semantic: 'AnyOf', identityRoles: ['#rau-both', '#rau-erp-only'], edgeRouterRoles: ['#rau-er'] });
    ids.serp = await made('/service-edge-router-policies', { name: 'rau-serp', semantic: 'AnyOf', serviceRoles: ['#rau-svc', '#rau-serp-svc'], edgeRouterRoles: ['#rau-er', '#rau-serp-er'] });
  });

  it('identities: the attributes identities carry and policies name on their identity side, each source counted (zero included), sorted by the filter', async () => {
    const r = await usage('identity', 'id contains "rau-" sort by id');
    expect(r.data.map((x) => x.roleAttribute)).toEqual(['rau-both', 'rau-erp-only', 'rau-id-only', 'rau-sp-only']);
    expect(counts(r.data)).toEqual({
      'rau-both': { identities: 2, servicePolicies: 1, edgeRouterPolicies: 1 },
      'rau-erp-only': { identities: 0, servicePolicies: 0, edgeRouterPolicies: 1 },
      'rau-id-only': { identities: 1, servicePolicies: 0, edgeRouterPolicies: 0 },
      'rau-sp-only': { identities: 0, servicePolicies: 2, edgeRouterPolicies: 0 },
    });
    // No ids unless asked.
    expect(r.data[0].usage.identities).toEqual({ count: 2 });
    expect(r.meta.pagination).toMatchObject({ totalCount: 4 });
    expect(r.meta.filterableFields).toEqual(expect.arrayContaining(['id']));
    // #all is a wildcard, not an attribute named all; @id names an entity.
    const all = (await usage('identity', 'true limit none')).data.map((x) => x.roleAttribute);
    expect(all).not.toContain('all');
    expect(all.some((a) => a.startsWith('@') || a.startsWith('#'))).toBe(false);
  });

  it('withIds=true adds the ids behind every count (an empty list for none)', async () => {
    const r = await usage('identity', 'id in ["rau-both", "rau-id-only"] sort by id', true);
    expect(r.data).toEqual([
      { roleAttribute: 'rau-both', usage: { identities: { count: 2, ids: [ids.i1, ids.i2].sort() }, servicePolicies: { count: 1, ids: [ids.sp1] }, edgeRouterPolicies: { count: 1, ids: [ids.erp] } } },
      { roleAttribute: 'rau-id-only', usage: { identities: { count: 1, ids: [ids.i1] }, servicePolicies: { count: 0, ids: [] }, edgeRouterPolicies: { count: 0, ids: [] } } },
    ]);
  });

  it('edge routers, services and posture checks: their own sources', async () => {
    expect(counts((await usage('edge-router', 'id contains "rau-" sort by id')).data)).toEqual({
      'rau-er': { edgeRouters: 1, edgeRouterPolicies: 1, serviceEdgeRouterPolicies: 1 },
      'rau-serp-er': { edgeRouters: 0, edgeRouterPolicies: 0, serviceEdgeRouterPolicies: 1 },
    });
    expect(counts((await usage('service', 'id contains "rau-" sort by id')).data)).toEqual({
      'rau-both': { services: 1, servicePolicies: 0, serviceEdgeRouterPolicies: 0 },
      'rau-serp-svc': { services: 0, servicePolicies: 0, serviceEdgeRouterPolicies: 1 },
      'rau-svc': { services: 1, servicePolicies: 1, serviceEdgeRouterPolicies: 1 },
    });
    expect(counts((await usage('posture-check', 'id contains "rau-" sort by id')).data)).toEqual({
      'rau-pc': { postureChecks: 1, servicePolicies: 1 },
      'rau-pc-ref': { postureChecks: 0, servicePolicies: 1 },
    });
  });

  it('follows changes: an attribute taken off, a policy deleted', async () => {
    expect((await mg('PATCH', `/identities/${ids.i2}`, { roleAttributes: ['rau-later'] })).status).toBe(200);
    expect((await mg('DELETE', `/edge-router-policies/${ids.erp}`)).status).toBe(200);
    expect(counts((await usage('identity', 'id in ["rau-both", "rau-erp-only", "rau-later"] sort by id')).data)).toEqual({
      'rau-both': { identities: 1, servicePolicies: 1, edgeRouterPolicies: 0 },
      'rau-later': { identities: 1, servicePolicies: 0, edgeRouterPolicies: 0 },
    });
  });

  it('pages by the filter (limit, skip), as the plain role-attribute lists do; the query parameters are checked', async () => {
    const r = await usage('identity', 'id contains "rau-" sort by id desc skip 1 limit 2');
    expect(r.data.map((x) => x.roleAttribute)).toEqual(['rau-later', 'rau-id-only']);
    expect(r.meta.pagination).toMatchObject({ totalCount: 4, limit: 2, offset: 1 });
    expect((await mg('GET', '/identity-role-attribute-usage?limit=x')).status).toBe(400);
    expect((await mg('GET', `/identity-role-attribute-usage?filter=${encodeURIComponent('nope = 1')}`)).status).toBe(400);
    expect((await mg('GET', '/identity-role-attribute-usage?withIds=maybe')).status).toBe(400);
  });

  it('is for admins only, and declared in the Management API document', async () => {
    await c.user('rau-user');
    const token = await c.login('rau-user', 'password1');
    for (const kind of ['identity', 'edge-router', 'service', 'posture-check']) {
      expect((await c.call('GET', `${MGMT}/${kind}-role-attribute-usage`, { token })).status).toBe(401);
      expect((await c.call('GET', `${MGMT}/${kind}-role-attribute-usage`)).status).toBe(401);
    }
    expect((await c.call('GET', `${CLIENT}/identity-role-attribute-usage`, { token: admin })).status).toBe(404);
    const doc = JSON.parse((await mg('GET', '/specs/edge-management/spec')).body.data);
    for (const [path, id] of [['identity', 'listIdentityRoleAttributeUsage'], ['edge-router', 'listEdgeRouterRoleAttributeUsage'], ['service', 'listServiceRoleAttributeUsage'], ['posture-check', 'listPostureCheckRoleAttributeUsage']]) {
      const op = doc.paths[`${MGMT}/${path}-role-attribute-usage`]?.get;
      expect(op?.operationId).toBe(id);
      expect(op.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['limit', 'offset', 'filter', 'withIds']));
    }
  });
});

describe('role attribute usage against a reference evaluation', () => {
  // Random entities and policies (a fixed seed), then every count compared with one worked out here
  // from what was created: the SQL and a plain reading of upstream's rule must agree.
  it('agrees on every attribute and source', async () => {
    let seed = 2101;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pool = ['prop-a', 'prop-b', 'prop-c', 'prop-d', 'prop-e'];
    const pick = () => pool.filter(() => rnd(3) === 0);
    const roles = () => (rnd(4) === 0 ? ['#all'] : pick().map((a) => `#${a}`));
    const carried: Record<string, Set<string>> = {};
    const named: Record<string, Record<string, Set<string>>> = { identities: {}, servicePolicies: {}, edgeRouterPolicies: {} };
    const add = (m: Record<string, Set<string>>, attr: string, id: string) => (m[attr] ??= new Set()).add(id);
    for (let i = 0; i < 12; i++) {
      const attrs = pick();
      const id = await made('/identities', { name: `prop-i${i}`, type: 'User', isAdmin: false, roleAttributes: attrs });
      for (const a of attrs) add(carried, a, id);
    }
    for (let i = 0; i < 6; i++) {
      const identityRoles = roles();
      const id = await made('/service-policies', { name: `prop-sp${i}`, type: rnd(2) ? 'Dial' : 'Bind', semantic: 'AnyOf', identityRoles, serviceRoles: ['#all'] });
      for (const r of identityRoles) if (r !== '#all') add(named.servicePolicies, r.slice(1), id);
      const erpRoles = roles();
      const erp = await made('/edge-router-policies', { name: `prop-erp${i}`, semantic: 'AllOf', identityRoles: erpRoles, edgeRouterRoles: ['#all'] });
      for (const r of erpRoles) if (r !== '#all') add(named.edgeRouterPolicies, r.slice(1), erp);
    }
    const got = (await usage('identity', 'id contains "prop-" sort by id', true)).data;
    const attributes = [...new Set([...Object.keys(carried), ...Object.keys(named.servicePolicies), ...Object.keys(named.edgeRouterPolicies)])].sort();
    expect(got.map((g) => g.roleAttribute)).toEqual(attributes);
    const sorted = (s?: Set<string>) => [...(s ?? [])].sort();
    for (const g of got) {
      expect(g.usage, g.roleAttribute).toEqual({
        identities: { count: carried[g.roleAttribute]?.size ?? 0, ids: sorted(carried[g.roleAttribute]) },
        servicePolicies: { count: named.servicePolicies[g.roleAttribute]?.size ?? 0, ids: sorted(named.servicePolicies[g.roleAttribute]) },
        edgeRouterPolicies: { count: named.edgeRouterPolicies[g.roleAttribute]?.size ?? 0, ids: sorted(named.edgeRouterPolicies[g.roleAttribute]) },
      });
    }
  });
});
