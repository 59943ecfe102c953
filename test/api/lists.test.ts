// The generic list through the API: filter, sort, paging from query and filter, roleFilter semantics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
const ids: Record<string, string> = {};
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  const people: [string, string[], Record<string, string | boolean>, number][] = [
    ['ann', ['web', 'eu'], { env: 'prod' }, 3],
    ['bob', ['web'], { env: 'dev' }, 1],
    ['cat', ['db', 'eu'], { env: 'prod', pager: true }, 2],
    ['dan', [], {}, 5],
  ];
  for (const [name, roleAttributes, tags, defaultHostingCost] of people) {
    const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'User', isAdmin: false, roleAttributes, tags, defaultHostingCost } });
    ids[name] = r.body.data.id;
  }
});
afterAll(() => c.close());

const names = async (query: string) => {
  const r = await c.call('GET', `${MGMT}/identities?${query}`, { token: admin });
  if (r.status !== 200) throw new Error(r.text);
  return (r.body.data as { name: string }[]).map((d) => d.name).filter((n) => n !== 'Default Admin');
};
const q = (filter: string) => `filter=${encodeURIComponent(filter)}`;
/** For unsorted lists: the default order is by id (random), not by name. */
const nameSet = async (query: string) => (await names(query)).sort();

describe('lists', () => {
  it('lists by id without a sort, as upstream, and returns role attributes and roles sorted', async () => {
    const all = (await c.call('GET', `${MGMT}/identities?limit=100`, { token: admin })).body.data as { id: string }[];
    const byId = all.map((i) => i.id);
    expect(byId).toEqual([...byId].sort());
    // Sorted whatever order they were written in (they are sets), on every resource that has them.
    const made = (await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'unsorted', type: 'Default', isAdmin: false, roleAttributes: ['zeta', 'Alpha', 'mid'] } })).body.data.id;
    expect((await c.call('GET', `${MGMT}/identities/${made}`, { token: admin })).body.data.roleAttributes).toEqual(['Alpha', 'mid', 'zeta']);
    const svc = (await c.call('POST', `${MGMT}/services`, { token: admin, body: { name: 'unsorted-svc', encryptionRequired: true, roleAttributes: ['b', 'a'] } })).body.data.id;
    expect((await c.call('GET', `${MGMT}/services/${svc}`, { token: admin })).body.data.roleAttributes).toEqual(['a', 'b']);
    const sp = (await c.call('POST', `${MGMT}/service-policies`, { token: admin, body: { name: 'unsorted-sp', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#zeta', `@${made}`, '#Alpha'], serviceRoles: ['#b', '#a'] } })).body.data.id;
    const policy = (await c.call('GET', `${MGMT}/service-policies/${sp}`, { token: admin })).body.data;
    expect(policy.identityRoles).toEqual([...['#zeta', `@${made}`, '#Alpha']].sort());
    expect(policy.serviceRoles).toEqual(['#a', '#b']);
    expect(policy.identityRolesDisplay.map((d: { role: string }) => d.role)).toEqual(policy.identityRoles);
    await c.call('DELETE', `${MGMT}/service-policies/${sp}`, { token: admin });
    await c.call('DELETE', `${MGMT}/services/${svc}`, { token: admin });
    await c.call('DELETE', `${MGMT}/identities/${made}`, { token: admin });
  });

  it('filters and sorts in SQL', async () => {
    expect(await names(q('tags.env = "prod" sort by name desc'))).toEqual(['cat', 'ann']);
    expect(await names(q('anyOf(roleAttributes) = "eu" and defaultHostingCost > 2'))).toEqual(['ann']);
    expect(await names(q('tags.pager = true'))).toEqual(['cat']);
    expect(await names(q('not isAdmin sort by defaultHostingCost desc'))).toEqual(['dan', 'ann', 'cat', 'bob']);
    expect(await names(q('name in ["bob", "dan"] sort by name'))).toEqual(['bob', 'dan']);
  });

  it('lets skip/limit in the filter win over offset/limit in the query string', async () => {
    const r = await c.call('GET', `${MGMT}/identities?${q('not isAdmin sort by name skip 1 limit 2')}&limit=50&offset=3`, { token: admin });
    expect(r.body.data.map((d: { name: string }) => d.name)).toEqual(['bob', 'cat']);
    expect(r.body.meta.pagination).toEqual({ limit: 2, offset: 1, totalCount: 4 });
    const fromQuery = await c.call('GET', `${MGMT}/identities?${q('not isAdmin sort by name')}&limit=1&offset=2`, { token: admin });
    expect(fromQuery.body.data.map((d: { name: string }) => d.name)).toEqual(['cat']);
    expect(fromQuery.body.meta.pagination).toEqual({ limit: 1, offset: 2, totalCount: 4 });
    const none = await c.call('GET', `${MGMT}/identities?${q('limit none')}`, { token: admin });
    expect(none.body.data).toHaveLength(5);
    expect(none.body.meta.pagination.totalCount).toBe(5);
  });

  it('reports filterable fields and refuses unknown ones with the position', async () => {
    const r = await c.call('GET', `${MGMT}/identities`, { token: admin });
    expect(r.body.meta.filterableFields).toEqual(expect.arrayContaining(['name', 'roleAttributes', 'tags', 'createdAt', 'isAdmin']));
    const bad = expectError(await c.call('GET', `${MGMT}/identities?${q('name = "a" and colour = "red"')}`, { token: admin }), 400, 'INVALID_FILTER');
    expect(bad.message).toMatch(/position 16: unknown field 'colour'/);
    expect(bad.cause).toMatchObject({ field: 'filter' });
    // Upstream 1.1.10: a sort inside the filter that it cannot do is INVALID_FILTER; INVALID_SORT_IDENTIFIER
    // only for the sort= parameter.
    expectError(await c.call('GET', `${MGMT}/identities?${q('sort by roleAttributes')}`, { token: admin }), 400, 'INVALID_FILTER');
    expectError(await c.call('GET', `${MGMT}/identities?${q('true sort by bogus')}`, { token: admin }), 400, 'INVALID_FILTER');
    expectError(await c.call('GET', `${MGMT}/identities?sort=bogus`, { token: admin }), 400, 'INVALID_SORT_IDENTIFIER');
    expect(expectError(await c.call('GET', `${MGMT}/identities?${q('isAdmin > true')}`, { token: admin }), 400, 'INVALID_FILTER').message).toMatch(/boolean field/);
    expect(expectError(await c.call('GET', `${MGMT}/identities?${q('createdAt > "2024-01-01"')}`, { token: admin }), 400, 'INVALID_FILTER').message).toMatch(/datetime\(2024-01-31T12:00:00Z\)/);
  });

  it('applies roleFilter with AllOf and AnyOf semantics', async () => {
    const rf = (...roles: string[]) => roles.map((r) => `roleFilter=${encodeURIComponent(r)}`).join('&');
    expect(await nameSet(`${rf('#web')}&limit=100`)).toEqual(['ann', 'bob']);
    expect(await nameSet(`${rf('#web', '#eu')}`)).toEqual(['ann']);
    expect(await nameSet(`${rf('#web', '#eu')}&roleSemantic=AllOf`)).toEqual(['ann']);
    expect(await nameSet(`${rf('#web', '#eu')}&roleSemantic=AnyOf`)).toEqual(['ann', 'bob', 'cat']);
    expect(await nameSet(`${rf('#all')}`)).toEqual(['ann', 'bob', 'cat', 'dan']);
    expect(await nameSet(`${rf(`@${ids.dan}`)}`)).toEqual(['dan']);
    expect(await nameSet(`${rf(`@${ids.dan}`, '#db')}&roleSemantic=AnyOf`)).toEqual(['cat', 'dan']);
    // AllOf joins the attributes; an @id is always selected (upstream 1.1.10 answers the same).
    expect(await nameSet(`${rf(`@${ids.dan}`, '#db')}`)).toEqual(['cat', 'dan']);
    expect(await nameSet(`${rf('eu')}&${q('defaultHostingCost < 3')}`)).toEqual(['cat']);
    expectError(await c.call('GET', `${MGMT}/identities?${rf('#web')}&roleSemantic=Most`, { token: admin }), 400, 'COULD_NOT_VALIDATE');
    expectError(await c.call('GET', `${MGMT}/identities?${rf('#')}`, { token: admin }), 400, 'INVALID_FIELD');
  });

  it('filters every declared list, including the caller’s own authenticators', async () => {
    const r = await c.call('GET', `${MGMT}/authenticators?${q('method = "updb" and username = "admin"')}`, { token: admin });
    expect(r.body.data).toHaveLength(1);
    expect((await c.call('GET', `${MGMT}/identity-types?${q('name contains "ou" sort by name')}`, { token: admin })).body.data.map((t: { id: string }) => t.id)).toEqual(['Router']);
    expect((await c.call('GET', `${CLIENT}/current-identity/authenticators?${q('method = "cert"')}`, { token: admin })).body.data).toEqual([]);
    expectError(await c.call('GET', `${CLIENT}/current-identity/authenticators?${q('nope = 1')}`, { token: admin }), 400, 'INVALID_FILTER');
  });
});
