// The caller's own edge routers (`GET /current-identity/edge-routers`) as SDKs ask for them, a first page
// and nothing else, are read in one statement compiled once (server/routes/shared/services.ts): the answer
// must equal the general list's (asked here with a filter, which takes the usual path) for every page size.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';
import { statementsOf } from '../helpers/statements.js';
import { enrollRouter } from '../peers/ctrl-router.js';

let c: TestController;
let admin: string;
let carol: string;
const enrolled: string[] = [];
let unenrolled: string;
let elsewhere: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  const api = async (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });
  const carolId = await c.user('carol');
  await api('PATCH', `/identities/${carolId}`, { roleAttributes: ['staff'] });
  for (const name of ['r-c', 'r-a', 'r-b']) enrolled.push((await enrollRouter({ api, c }, name, ['staff-routers'])).id);
  unenrolled = (await api('POST', '/edge-routers', { name: 'r-never', roleAttributes: ['staff-routers'] })).body.data.id;
  elsewhere = (await enrollRouter({ api, c }, 'r-other', ['other-routers'])).id;
  const policy = await api('POST', '/edge-router-policies', { name: 'staff-routers', semantic: 'AnyOf', identityRoles: ['#staff'], edgeRouterRoles: ['#staff-routers'] });
  expect(policy.status, JSON.stringify(policy.body)).toBe(201);
  // A second policy granting one of the same routers: listed once.
  await api('POST', '/edge-router-policies', { name: 'carol-r-a', semantic: 'AnyOf', identityRoles: [`@${carolId}`], edgeRouterRoles: [`@${enrolled[1]}`] });
  carol = await c.login('carol', 'password1');
}, 60_000);
afterAll(() => c.close());

const mine = (token: string, query = '') => c.call('GET', `${CLIENT}/current-identity/edge-routers${query}`, { token });
const withoutVersion = (b: any) => ({ ...b, meta: { ...b.meta, apiVersion: undefined } });

describe("the caller's edge routers", () => {
  it('answers a first page as the general list does, for every page size', async () => {
    for (const query of ['', '?limit=500', '?limit=3', '?limit=2', '?limit=1', '?offset=0&limit=25', '?limit=-1']) {
      const fast = await mine(carol, query);
      const usual = await mine(carol, `${query}${query ? '&' : '?'}filter=${encodeURIComponent('true')}`);
      expect(fast.status, fast.text).toBe(200);
      expect(withoutVersion(fast.body), query).toEqual(withoutVersion(usual.body));
    }
    // What the answers hold, so that equal cannot mean equally wrong: the enrolled routers the policies
    // grant, each once, by id; not the one never enrolled, not one of another policy.
    const all = (await mine(carol, '?limit=500')).body;
    expect(all.data.map((r: { id: string }) => r.id)).toEqual([...enrolled].sort());
    expect(all.data.map((r: { id: string }) => r.id)).not.toContain(unenrolled);
    expect(all.data.map((r: { id: string }) => r.id)).not.toContain(elsewhere);
    expect(all.meta.pagination).toEqual({ limit: 500, offset: 0, totalCount: 3 });
    expect(all.data[0]).toMatchObject({ isOnline: false, _links: { self: { href: expect.stringContaining('/edge-routers/') } } });
    expect(all.data[0].enrollmentToken).toBeUndefined();
    const two = (await mine(carol, '?limit=2')).body;
    expect(two.meta.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3 });
    expect(two.data).toHaveLength(2);
    expect((await mine(carol, '?offset=2&limit=2')).body.data.map((r: { id: string }) => r.id)).toEqual([[...enrolled].sort()[2]]);
    // An admin lists by the same policies (none grant the admin here).
    expect((await mine(admin)).body.data).toEqual([]);
  });

  it('is two statements (the session, the page) for a first page; a filter takes the usual path', async () => {
    expect(await statementsOf(c, () => mine(carol, '?limit=500'))).toBe(2);
    expect(await statementsOf(c, () => mine(carol, `?filter=${encodeURIComponent('name contains "r-"')}`))).toBeGreaterThan(2);
  });
});
