// Reads made with the caller's API session in one statement (server/plugins/auth.ts withSession):
// one service by name, as SDKs ask before each dial and bind (`GET /services?filter=name="x"`), which
// must answer exactly as the general list does (asked here with `limit=10`, which takes the usual
// path) for every caller and every kind of service; the service-updates poll; and a first page of the
// list with nothing else asked (one statement compiled once, server/crud.ts firstPage).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/model/ids.js';
import { WIDE_PAGE } from '../../src/model/resources/services.js';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';
import { statementsOf } from '../helpers/statements.js';

let c: TestController;
let admin: string;
let carol: string;
let carolId: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  const post = async (path: string, body: unknown) => {
    const r = await c.call('POST', `${MGMT}${path}`, { token: admin, body });
    expect(r.status, r.text).toBeLessThan(300);
    return r.body.data?.id as string;
  };
  carolId = await c.user('carol');
  await c.call('PATCH', `${MGMT}/identities/${carolId}`, { token: admin, body: { roleAttributes: ['staff'] } });
  await post('/configs', { name: 'app-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['app.internal'], portRanges: [{ low: 443, high: 443 }] } });
  await post('/configs', { name: 'app-host', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'localhost', port: 8443 } });
  const own = await post('/configs', { name: 'carol-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['carol.app.internal'], portRanges: [{ low: 443, high: 443 }] } });
  await post('/services', { name: 'app', encryptionRequired: true, configs: ['app-intercept', 'app-host'], roleAttributes: ['app'] });
  await post('/services', { name: 'checked', encryptionRequired: true, roleAttributes: ['checked'] });
  await post('/services', { name: 'hidden', encryptionRequired: true, configs: ['app-host'] });
  await post('/service-policies', { name: 'carol-dials-app', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#app'] });
  await post('/service-policies', { name: 'carol-binds-app', type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${carolId}`], serviceRoles: ['#app'] });
  await post('/posture-checks', { name: 'corp-domain', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['corp'] });
  await post('/service-policies', { name: 'carol-dials-checked', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#checked'], postureCheckRoles: ['#corp'] });
  expect((await c.call('POST', `${MGMT}/identities/${carolId}/service-configs`, { token: admin, body: [{ serviceId: 'app', configId: own }] })).status).toBe(200);
  carol = await c.login('carol', 'password1');
});
afterAll(() => c.close());

const byName = (token: string, name: string, extra = '') => c.call('GET', `${CLIENT}/services?filter=${encodeURIComponent(`name = "${name}"`)}${extra}`, { token });

describe('one service by name', () => {
  it('answers as the general list does: granted, hidden, missing, as a client and as an admin, with config types', async () => {
    const cases: [string, string, string][] = [
      [carol, 'app', ''],
      [carol, 'app', '&configTypes=all'],
      [carol, 'app', '&configTypes=intercept.v1'],
      [carol, 'app', '&configTypes=host.v1&configTypes=intercept.v1'],
      [carol, 'checked', '&configTypes=all'],
      [carol, 'hidden', '&configTypes=all'],
      [carol, 'missing', ''],
      [admin, 'hidden', '&configTypes=all'],
      [admin, 'app', '&configTypes=intercept.v1'],
    ];
    for (const [token, name, extra] of cases) {
      const fast = await byName(token, name, extra);
      const usual = await byName(token, name, `${extra}&limit=10`);
      expect(fast.status, fast.text).toBe(200);
      expect({ ...fast.body, meta: { ...fast.body.meta, apiVersion: undefined } }, `${name}${extra}`).toEqual({ ...usual.body, meta: { ...usual.body.meta, apiVersion: undefined } });
    }
    // What the answers hold, so that equal cannot mean equally wrong.
    const app = (await byName(carol, 'app', '&configTypes=all')).body;
    expect(app.meta.pagination).toEqual({ limit: 10, offset: 0, totalCount: 1 });
    // One entry per granting policy (upstream's form), passing: they hold no checks.
    expect(app.data[0]).toMatchObject({ name: 'app', permissions: ['Bind', 'Dial'] });
    expect(app.data[0].postureQueries.map((q: { policyType: string; isPassing: boolean }) => [q.policyType, q.isPassing]).sort()).toEqual([['Bind', true], ['Dial', true]]);
    // Carol's own intercept config overrides the service's.
    expect(app.data[0].config['intercept.v1'].addresses).toEqual(['carol.app.internal']);
    expect(app.data[0].config['host.v1'].port).toBe(8443);
    expect(Object.keys((await byName(carol, 'app', '&configTypes=host.v1')).body.data[0].config)).toEqual(['host.v1']);
    expect((await byName(carol, 'checked')).body.data[0].postureQueries[0]).toMatchObject({ policyType: 'Dial', isPassing: false });
    // A posture response turns the check's query to passing, on both paths alike.
    const query = (await byName(carol, 'checked')).body.data[0].postureQueries[0].postureQueries[0];
    expect(query).toMatchObject({ queryType: 'DOMAIN', isPassing: false });
    expect((await c.call('POST', `${CLIENT}/posture-response`, { token: carol, body: { id: query.id, typeId: 'DOMAIN', domain: 'corp.example' } })).status).toBeLessThan(300);
    const passing = await byName(carol, 'checked');
    expect(passing.body.data[0].postureQueries[0]).toMatchObject({ isPassing: true, postureQueries: [{ id: query.id, isPassing: true }] });
    expect(passing.body.data).toEqual((await byName(carol, 'checked', '&limit=10')).body.data);
    expect((await byName(carol, 'hidden')).body).toMatchObject({ data: [], meta: { pagination: { totalCount: 0 } } });
    expect((await byName(admin, 'hidden')).body.data[0].permissions).toEqual(['Bind', 'Dial']);
  });

  it('is one statement for the session, the service and its reads; other lists take the usual path', async () => {
    expect(await statementsOf(c, () => byName(carol, 'app', '&configTypes=all'))).toBe(1);
    expect(await statementsOf(c, () => byName(carol, 'hidden'))).toBe(1);
    // With a posture check, whose responses are read in it too.
    expect(await statementsOf(c, () => byName(carol, 'checked'))).toBe(1);
    expect(await statementsOf(c, () => byName(carol, 'app', '&limit=10'))).toBeGreaterThan(1);
    expect(await statementsOf(c, () => c.call('GET', `${CLIENT}/services?filter=${encodeURIComponent('name = "app" or name = "checked"')}`, { token: carol }))).toBeGreaterThan(1);
  });

  it('answers a first page with nothing else asked (its own compiled statement) as the general list does', async () => {
    for (const token of [carol, admin]) {
      for (const query of ['', '?limit=1', '?limit=2', '?limit=3', '?limit=500&configTypes=all', '?configTypes=intercept.v1', '?offset=0&limit=25&configTypes=host.v1']) {
        const first = await c.call('GET', `${CLIENT}/services${query}`, { token });
        const usual = await c.call('GET', `${CLIENT}/services${query}${query ? '&' : '?'}filter=true`, { token });
        expect(first.status, first.text).toBe(200);
        expect({ ...first.body, meta: { ...first.body.meta, apiVersion: undefined } }, query).toEqual({ ...usual.body, meta: { ...usual.body.meta, apiVersion: undefined } });
      }
    }
    // What they hold: carol's two granted services (not the hidden one), an admin's three.
    expect((await c.call('GET', `${CLIENT}/services`, { token: carol })).body.data.map((s: { name: string }) => s.name).sort()).toEqual(['app', 'checked']);
    expect((await c.call('GET', `${CLIENT}/services?limit=500`, { token: admin })).body.meta.pagination).toEqual({ limit: 500, offset: 0, totalCount: 3 });
    expect((await c.call('GET', `${CLIENT}/services?limit=1`, { token: carol })).body.meta.pagination).toEqual({ limit: 1, offset: 0, totalCount: 2 });
  });

  it('answers a page of many services (its grants read from the caller\'s side) as one service by name does', async () => {
    const post = async (path: string, body: unknown) => {
      const r = await c.call('POST', `${MGMT}${path}`, { token: admin, body });
      expect(r.status, r.text).toBeLessThan(300);
    };
    // More than a wide page of services for carol: Dial through one policy, some Bind through another
    // as well, one of them also posture-checked; configs on some.
    for (let i = 0; i < WIDE_PAGE + 5; i++) {
      await post('/services', { name: `bulk-${String(i).padStart(3, '0')}`, encryptionRequired: true, roleAttributes: ['bulk', ...(i % 7 ? [] : ['bulk-bind'])], configs: i % 3 ? [] : ['app-host'] });
    }
    await post('/service-policies', { name: 'staff-dials-bulk', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#bulk'] });
    await post('/service-policies', { name: 'carol-binds-some', type: 'Bind', semantic: 'AnyOf', identityRoles: [`@${carolId}`], serviceRoles: ['#bulk-bind'], postureCheckRoles: ['#corp'] });
    for (const [token, extra] of [[carol, '&configTypes=all'], [carol, ''], [admin, '&configTypes=intercept.v1']]) {
      const page = await c.call('GET', `${CLIENT}/services?limit=500${extra}`, { token });
      expect(page.status, page.text).toBe(200);
      expect(page.body.data.length).toBeGreaterThanOrEqual(WIDE_PAGE);
      for (const s of page.body.data) expect((await byName(token, s.name, extra)).body.data, s.name).toEqual([s]);
    }
    // What the page holds, so that equal cannot mean equally wrong.
    const page = (await c.call('GET', `${CLIENT}/services?limit=500`, { token: carol })).body.data as { name: string; permissions: string[]; postureQueries: unknown[] }[];
    expect(page.map((s) => s.name).filter((n) => !n.startsWith('bulk-')).sort()).toEqual(['app', 'checked']);
    expect(page.find((s) => s.name === 'bulk-000')).toMatchObject({ permissions: ['Bind', 'Dial'] });
    expect(page.find((s) => s.name === 'bulk-000')!.postureQueries).toHaveLength(2);
    expect(page.find((s) => s.name === 'bulk-001')).toMatchObject({ permissions: ['Dial'] });
  });

  it('refuses a bad filter or query the way the general list does', async () => {
    expect((await c.call('GET', `${CLIENT}/services?filter=${encodeURIComponent('name = ')}`, { token: admin })).status).toBe(400);
    expect((await byName(admin, 'app', '&configTypes=' + 'x'.repeat(300))).status).toBe(400);
  });
  it('answers the service-updates poll in one statement: the later of the shared marker and the session\'s posture responses', async () => {
    const poll = async (token = carol) => (await c.call('GET', `${CLIENT}/current-api-session/service-updates`, { token })).body.data.lastChangeAt as string;
    expect(await statementsOf(c, () => poll())).toBe(1);
    const marker = async () => (await c.opened.ctx.store.db.selectFrom('changeMarkers').select('changedAt').where('name', '=', 'services').executeTakeFirstOrThrow()).changedAt;
    // Carol answered a posture query above, after the last change: her responses are the later.
    const responded = await c.opened.ctx.store.db.selectFrom('postureResponses').select((eb) => eb.fn.max('updatedAt').as('at')).where('apiSessionId', '=', (await c.call('GET', `${CLIENT}/current-api-session`, { token: carol })).body.data.id).executeTakeFirstOrThrow();
    expect(await poll()).toBe([await marker(), responded.at as string].sort().at(-1));
    // A change to the services moves the marker past them; the admin (no responses) sees the marker.
    c.clock.advance(1000);
    expect((await c.call('POST', `${MGMT}/services`, { token: admin, body: { name: 'later', encryptionRequired: true } })).status).toBe(201);
    expect(await poll()).toBe(await marker());
    expect(await poll(admin)).toBe(await marker());
    // An API token has no API session to read it with: read after, the same answer.
    const apiToken = (await c.call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'poller', expiresInDays: 1 } })).body.data.token;
    expect(await poll(apiToken)).toBe(await marker());
    expect((await c.call('GET', `${CLIENT}/current-api-session/service-updates`, { token: 'not-a-token' })).status).toBe(401);
  });

  it('checks the API session as any request does', async () => {
    expect((await byName('not-a-token', 'app')).status).toBe(401);
    const dana = await c.user('dana');
    const token = await c.login('dana', 'password1');
    expect((await byName(token, 'app')).body.data).toEqual([]);
    // Disabled: refused at once.
    expect((await c.call('POST', `${MGMT}/identities/${dana}/disable`, { token: admin, body: { durationMinutes: 0 } })).status).toBe(200);
    expect((await byName(token, 'app')).status).toBe(401);
    // Logged out: refused.
    const again = await c.login('carol', 'password1');
    expect((await byName(again, 'app')).body.data).toHaveLength(1);
    expect((await c.call('DELETE', `${CLIENT}/current-api-session`, { token: again })).status).toBe(200);
    expect((await byName(again, 'app')).status).toBe(401);
    // Idle past the timeout: refused, and the session ended.
    const late = await c.login('carol', 'password1');
    c.clock.advance((c.config.sessionTimeoutMinutes + 1) * 60_000);
    expect((await byName(late, 'app')).status).toBe(401);
    expect(await c.opened.ctx.store.db.selectFrom('apiSessions').select('id').where('tokenHash', '=', hashSecret(late)).execute()).toHaveLength(0);
  });

});
