// Services, edge routers and the three policy kinds, through both APIs: what a client may see and use
// follows the policies at once, after every kind of change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const post = (path: string, body: unknown) => c.call('POST', `${MGMT}${path}`, { token: admin, body });
const patch = (path: string, body: unknown) => c.call('PATCH', `${MGMT}${path}`, { token: admin, body });
const get = (path: string, token = admin) => c.call('GET', path.startsWith('/edge/') ? path : `${MGMT}${path}`, { token });
const created = async (path: string, body: unknown) => {
  const r = await post(path, body);
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
};
const names = (r: { body: { data: { name: string }[] } }) => r.body.data.map((x) => x.name).sort();

describe('services', () => {
  it('are created with configs by id or name, one per type; encryptionRequired cannot change', async () => {
    const intercept = await created('/configs', { name: 'db-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['db.internal'], portRanges: [{ low: 5432, high: 5432 }] } });
    const host = await created('/configs', { name: 'db-host', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'localhost', port: 5432 } });
    const other = await created('/configs', { name: 'db-intercept-2', configTypeId: 'intercept.v1', data: { protocols: ['udp'], addresses: ['db2.internal'], portRanges: [{ low: 1, high: 2 }] } });
    const id = await created('/services', { name: 'db', encryptionRequired: true, configs: [intercept, 'db-host'], roleAttributes: ['data', 'data'], maxIdleTimeMillis: 60000 });
    const d = (await get(`/services/${id}`)).body.data;
    expect(d).toMatchObject({ name: 'db', encryptionRequired: true, roleAttributes: ['data'], maxIdleTimeMillis: 60000, terminatorStrategy: 'smartrouting', permissions: ['Bind', 'Dial'], postureQueries: [] });
    expect(d.configs.sort()).toEqual([intercept, host].sort());
    expectError(await post('/services', { name: 'two', encryptionRequired: false, configs: [intercept, other] }), 400, 'INVALID_FIELD');
    expectError(await post('/services', { name: 'none', encryptionRequired: false, configs: ['nope'] }), 400, 'INVALID_FIELD');
    expectError(await post('/services', { name: 'no-flag' }), 400, 'COULD_NOT_VALIDATE');
    expectError(await patch(`/services/${id}`, { encryptionRequired: false }), 400, 'INVALID_FIELD');
    expect((await patch(`/services/${id}`, { encryptionRequired: true, configs: [other] })).status).toBe(200);
    expect((await get(`/services/${id}`)).body.data.configs).toEqual([other]);
    // The config's services, the service's configs.
    expect(names(await get(`/configs/${other}/services`))).toEqual(['db']);
    expect(names(await get(`/services/${id}/configs`))).toEqual(['db-intercept-2']);
    // configTypes selects which configs the service carries.
    const withConfig = (await get(`/services/${id}?configTypes=intercept.v1`)).body.data;
    expect(Object.keys(withConfig.config)).toEqual(['intercept.v1']);
    expect(withConfig.config['intercept.v1'].addresses).toEqual(['db2.internal']);
    // Deleting a config a service carries takes it off the service, as upstream does.
    const spare = (await post('/configs', { name: 'db-spare', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'localhost', port: 5432 } })).body.data.id;
    expect((await patch(`/services/${id}`, { configs: [other, spare] })).status).toBe(200);
    expect((await c.call('DELETE', `${MGMT}/configs/${spare}`, { token: admin })).status).toBe(200);
    expect((await get(`/services/${id}`)).body.data.configs).toEqual([other]);
    expect((await get(`/service-role-attributes`)).body.data).toEqual(['data']);
  });
});

describe('edge routers and routers', () => {
  it('are created with an enrollment JWT; /routers lists both kinds', async () => {
    const er = await created('/edge-routers', { name: 'er-1', roleAttributes: ['public'], cost: 10, isTunnelerEnabled: true, appData: { region: 'eu' } });
    const d = (await get(`/edge-routers/${er}`)).body.data;
    expect(d).toMatchObject({ name: 'er-1', roleAttributes: ['public'], cost: 10, isTunnelerEnabled: true, appData: { region: 'eu' }, isOnline: false, isVerified: false, disabled: false, noTraversal: false });
    expect(d.enrollmentJwt).toMatch(/^ey/);
    expect(d.enrollmentToken).toMatch(/^[0-9a-f-]{36}$/);
    const tr = await created('/routers', { name: 'tr-1', cost: 5 });
    expect((await get(`/transit-routers/${tr}`)).body.data).toMatchObject({ name: 'tr-1', cost: 5, isVerified: false });
    // Both paths link to ./transit-routers/, as upstream 1.1.10's answers do.
    expect((await get(`/transit-routers/${tr}`)).body.data._links.self.href).toBe(`./transit-routers/${tr}`);
    expect((await get(`/routers/${tr}`)).body.data._links.self.href).toBe(`./transit-routers/${tr}`);
    expect(names(await get('/routers'))).toEqual(['er-1', 'tr-1']);
    expect(names(await get('/edge-routers'))).toEqual(['er-1']);
    expectError(await get(`/edge-routers/${tr}`), 404);
    expectError(await post('/edge-routers', { name: 'bad', cost: 70000 }), 400, 'COULD_NOT_VALIDATE');
    // The router enrollment shows in the enrollments list, linked to its router.
    const enr = (await get(`/enrollments?filter=${encodeURIComponent(`edgeRouterId = "${er}"`)}`)).body.data;
    expect(enr).toHaveLength(1);
    expect(enr[0]).toMatchObject({ method: 'erott', edgeRouterId: er, edgeRouter: { name: 'er-1' } });
    expect((await get(`/edge-router-role-attributes`)).body.data).toEqual(['public']);
    expect((await c.call('DELETE', `${MGMT}/routers/${tr}`, { token: admin })).status).toBe(200);
  });

  it('a tunneler-enabled one brings a Router identity and a system edge router policy, as upstream 1.1.10', async () => {
    const del = (path: string) => c.call('DELETE', `${MGMT}${path}`, { token: admin });
    const find = async (path: string, filter: string) => (await get(`${path}?filter=${encodeURIComponent(filter)}`)).body.data;
    const er = await created('/edge-routers', { name: 'tun-1', isTunnelerEnabled: true });
    const [identity] = await find('/identities', 'name = "tun-1"');
    expect(identity).toMatchObject({ name: 'tun-1', typeId: 'Router', isAdmin: false, authPolicyId: 'default' });
    const [erp] = await find('/edge-router-policies', `name = "edge-router-${er}-system"`);
    expect(erp).toMatchObject({ isSystem: true, semantic: 'AnyOf', identityRoles: [`@${identity.id}`], edgeRouterRoles: [`@${er}`] });
    // The policy joins the two; the router's role attributes stay its own.
    expect((await get(`/identities/${identity.id}/edge-routers`)).body.data.map((r: { id: string }) => r.id)).toEqual([er]);
    // Only the router changes them: upstream's refusals.
    expect(expectError(await patch(`/identities/${identity.id}`, { name: 'other' }), 400, 'COULD_NOT_VALIDATE').cause).toMatchObject({ field: 'name', reason: 'may not change name of router identities' });
    expectError(await del(`/identities/${identity.id}`), 400, 'ENTITY_CAN_NOT_BE_DELETED');
    expectError(await del(`/edge-router-policies/${erp.id}`), 400, 'ENTITY_CAN_NOT_BE_DELETED');
    expectError(await patch(`/edge-router-policies/${erp.id}`, { name: 'mine' }), 400, 'ENTITY_CAN_NOT_BE_UPDATED');
    // Renamed with the router; gone when the flag is turned off, back when it is on again.
    expect((await patch(`/edge-routers/${er}`, { name: 'tun-1b', roleAttributes: ['tunnelers'] })).status).toBe(200);
    const renamed = (await get(`/identities/${identity.id}`)).body.data;
    expect(renamed.name).toBe('tun-1b');
    expect(renamed.roleAttributes ?? []).not.toContain('tunnelers');
    expect((await patch(`/edge-routers/${er}`, { isTunnelerEnabled: false })).status).toBe(200);
    expectError(await get(`/identities/${identity.id}`), 404);
    expectError(await get(`/edge-router-policies/${erp.id}`), 404);
    expect((await get(`/edge-routers/${er}`)).body.data.roleAttributes).toEqual(['tunnelers']);
    expect((await patch(`/edge-routers/${er}`, { isTunnelerEnabled: true })).status).toBe(200);
    expect(await find('/identities', 'name = "tun-1b"')).toMatchObject([{ typeId: 'Router' }]);
    // Deleting the router takes both along.
    expect((await del(`/edge-routers/${er}`)).status).toBe(200);
    expect(await find('/identities', 'name = "tun-1b"')).toEqual([]);
    expect(await find('/edge-router-policies', `name = "edge-router-${er}-system"`)).toEqual([]);
    // A router without the flag has neither.
    await created('/edge-routers', { name: 'plain-1' });
    expect(await find('/identities', 'name = "plain-1"')).toEqual([]);
  });
});

describe('policies', () => {
  it('decide what each identity may dial, bind and connect through, and follow every change', async () => {
    const alice = await c.user('alice');
    const bob = await c.user('bobby');
    await patch(`/identities/${alice}`, { roleAttributes: ['staff'] });
    const web = await created('/services', { name: 'web', encryptionRequired: true, roleAttributes: ['public-svc'] });
    const er2 = await created('/edge-routers', { name: 'er-2', roleAttributes: ['public'] });

    const sp = await created('/service-policies', { name: 'staff-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#public-svc', '@db'] });
    const spd = (await get(`/service-policies/${sp}`)).body.data;
    const db = (await get(`/services?filter=${encodeURIComponent('name = "db"')}`)).body.data[0].id;
    expect(spd.serviceRoles).toEqual(['#public-svc', `@${db}`]);
    expect(spd.serviceRolesDisplay).toEqual([{ role: '#public-svc', name: '#public-svc' }, { role: `@${db}`, name: '@db' }]);
    expectError(await post('/service-policies', { name: 'bad', type: 'Dial', semantic: 'AnyOf', identityRoles: ['staff'] }), 400, 'COULD_NOT_VALIDATE');
    expectError(await post('/service-policies', { name: 'bad', type: 'Dial', semantic: 'AnyOf', identityRoles: ['@nobody'] }), 400, 'COULD_NOT_VALIDATE');
    expectError(await post('/service-policies', { name: 'bad', type: 'Sometimes', semantic: 'AnyOf' }), 400, 'COULD_NOT_VALIDATE');
    // #all stands alone in every role list of every policy kind, as upstream 1.1.10 answers.
    const alone = 'if using #all, it should be the only role specified';
    for (const [path, body] of [
      ['/service-policies', { name: 'bad-all', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#all', '#staff'] }],
      ['/service-policies', { name: 'bad-all', type: 'Dial', semantic: 'AnyOf', postureCheckRoles: ['#all', '#all'] }],
      ['/edge-router-policies', { name: 'bad-all', semantic: 'AnyOf', edgeRouterRoles: ['#public', '#all'] }],
      ['/service-edge-router-policies', { name: 'bad-all', semantic: 'AnyOf', serviceRoles: ['#all', '@web'] }],
    ] as const) {
      const e = expectError(await post(path, body), 400, 'COULD_NOT_VALIDATE');
      expect(e.cause, path).toMatchObject({ field: Object.keys(body).find((k) => k.endsWith('Roles')), reason: alone });
    }
    const lone = await post('/edge-router-policies', { name: 'all-alone', semantic: 'AnyOf', edgeRouterRoles: ['#all'], identityRoles: ['#all'] });
    expect(lone.status, lone.text).toBe(201);
    expect((await c.call('DELETE', `${MGMT}/edge-router-policies/${lone.body.data.id}`, { token: admin })).status).toBe(200);

    const aliceToken = await c.login('alice', 'password1');
    const bobToken = await c.login('bobby', 'password1');
    const clientServices = async (token: string) => (await c.call('GET', `${CLIENT}/services?limit=100`, { token })).body.data as { name: string; permissions: string[]; postureQueries: unknown[] }[];
    let seen = await clientServices(aliceToken);
    expect(seen.map((s) => s.name).sort()).toEqual(['db', 'web']);
    expect(seen.every((s) => s.permissions.join() === 'Dial')).toBe(true);
    expect(seen[0].postureQueries).toEqual([{ policyId: sp, policyType: 'Dial', isPassing: true, postureQueries: [] }]);
    expect(await clientServices(bobToken)).toEqual([]);
    expectError(await c.call('GET', `${CLIENT}/services/${web}`, { token: bobToken }), 404);
    expect((await c.call('GET', `${CLIENT}/services/${web}`, { token: aliceToken })).body.data.name).toBe('web');
    // One service by name, as SDKs look one up: the same answer (the grant checked on the named row).
    const byName = async (token: string, filter: string) => ((await c.call('GET', `${CLIENT}/services?filter=${encodeURIComponent(filter)}`, { token })).body.data as { name: string }[]).map((s) => s.name);
    expect(await byName(aliceToken, 'name = "web"')).toEqual(['web']);
    expect(await byName(aliceToken, 'name = "web" and encryptionRequired = false')).toEqual([]);
    expect(await byName(bobToken, 'name = "web"')).toEqual([]);
    expect(await byName(bobToken, `id = "${web}"`)).toEqual([]);

    // Bob gets the attribute: he sees the services at once. A bind policy adds Bind.
    await patch(`/identities/${bob}`, { roleAttributes: ['staff', 'hosts'] });
    expect((await clientServices(bobToken)).map((s) => s.name).sort()).toEqual(['db', 'web']);
    await created('/service-policies', { name: 'hosts-bind', type: 'Bind', semantic: 'AllOf', identityRoles: ['#hosts'], serviceRoles: ['#all'] });
    const bobWeb = (await clientServices(bobToken)).find((s) => s.name === 'web')!;
    expect(bobWeb.permissions).toEqual(['Bind', 'Dial']);
    expect(await byName(bobToken, 'name = "web"')).toEqual(['web']);
    expect(names(await get(`/identities/${bob}/services?policyType=bind`))).toEqual(['db', 'web']);
    expect(names(await get(`/services/${web}/identities?policyType=dial`))).toEqual(['alice', 'bobby']);
    expect(names(await get(`/services/${web}/identities?policyType=bind`))).toEqual(['bobby']);
    expect(names(await get(`/identities/${alice}/service-policies`))).toEqual(['staff-dial']);
    expect(names(await get(`/service-policies/${sp}/services`))).toEqual(['db', 'web']);

    // The service loses its attribute: gone from the list (db stays, named by @id).
    await patch(`/services/${web}`, { roleAttributes: [] });
    expect((await clientServices(aliceToken)).map((s) => s.name)).toEqual(['db']);
    // Changing the policy's semantic to AllOf: it joins the attributes only, an @id is always selected
    // (upstream 1.1.10's rule): db stays, named by @id.
    await patch(`/service-policies/${sp}`, { semantic: 'AllOf' });
    expect((await clientServices(aliceToken)).map((s) => s.name)).toEqual(['db']);
    // AllOf [@a, @b] selects both, as upstream (`ziti edge create service-policy` defaults to AllOf).
    await patch(`/service-policies/${sp}`, { serviceRoles: [`@${web}`, `@${db}`] });
    expect((await clientServices(aliceToken)).map((s) => s.name).sort()).toEqual(['db', 'web']);
    await patch(`/service-policies/${sp}`, { semantic: 'AnyOf', serviceRoles: ['#all'] });
    expect((await clientServices(aliceToken)).map((s) => s.name).sort()).toEqual(['db', 'web']);

    // Edge routers: an edge router policy for the identity, a service edge router policy for the service.
    const erp = await created('/edge-router-policies', { name: 'staff-routers', semantic: 'AnyOf', identityRoles: ['#staff'], edgeRouterRoles: ['#public'] });
    const routersOf = async (token: string) => (await c.call('GET', `${CLIENT}/current-identity/edge-routers`, { token })).body.data.map((r: { name: string }) => r.name).sort();
    // As upstream, clients are offered only routers that finished enrollment.
    expect(await routersOf(aliceToken)).toEqual([]);
    await c.opened.ctx.store.db.updateTable('routers').set({ isVerified: 1 }).where('name', 'in', ['er-1', 'er-2']).execute();
    expect(await routersOf(aliceToken)).toEqual(['er-1', 'er-2']);
    // The client's view of a router: its public fields, nothing of enrollment or certificates.
    const er1View = (await c.call('GET', `${CLIENT}/current-identity/edge-routers`, { token: aliceToken })).body.data.find((r: { name: string }) => r.name === 'er-1');
    expect(er1View).toMatchObject({ name: 'er-1', cost: 10, appData: { region: 'eu' }, disabled: false, isOnline: false, noTraversal: false, syncStatus: 'SYNC_UNKNOWN', hostname: '', supportedProtocols: {}, tags: {} });
    // Upstream's edge router links, as on the management detail.
    expect(er1View._links).toEqual({
      self: { href: `./edge-routers/${er1View.id}` }, 'edge-router-policies': { href: `./edge-routers/${er1View.id}/edge-router-policies` },
      'service-edge-router-policies': { href: `./edge-routers/${er1View.id}/service-edge-router-policies` },
    });
    expect(er1View).not.toHaveProperty('enrollmentJwt');
    expect(er1View).not.toHaveProperty('certPem');
    const serviceRouters = async (token: string, id: string) => (await c.call('GET', `${CLIENT}/services/${id}/edge-routers`, { token })).body.data.edgeRouters.map((r: { name: string }) => r.name).sort();
    expect(await serviceRouters(aliceToken, web)).toEqual([]);
    await created('/service-edge-router-policies', { name: 'web-on-er2', semantic: 'AllOf', serviceRoles: [`@web`], edgeRouterRoles: [`@${er2}`] });
    expect(await serviceRouters(aliceToken, web)).toEqual(['er-2']);
    expect(names(await get(`/edge-routers/${er2}/services`))).toEqual(['web']);
    expect(names(await get(`/edge-routers/${er2}/identities`))).toEqual(['alice', 'bobby']);
    expect(names(await get(`/edge-router-policies/${erp}/edge-routers`))).toEqual(['er-1', 'er-2']);
    expect(names(await get(`/identities/${alice}/edge-routers`))).toEqual(['er-1', 'er-2']);

    const advice = (await get(`/identities/${alice}/policy-advice/${web}`)).body.data;
    expect(advice).toMatchObject({ identityId: alice, serviceId: web, isDialAllowed: true, isBindAllowed: false, identityRouterCount: 2, serviceRouterCount: 1 });
    expect(advice.commonRouters.map((r: { name: string }) => r.name)).toEqual(['er-2']);
    expectError(await get(`/identities/${alice}/policy-advice/nope`), 404);

    // Deleting the router removes it everywhere; deleting the policy removes what it granted.
    expect((await c.call('DELETE', `${MGMT}/edge-routers/${er2}`, { token: admin })).status).toBe(200);
    expect(await routersOf(aliceToken)).toEqual(['er-1']);
    expect((await c.call('DELETE', `${MGMT}/service-policies/${sp}`, { token: admin })).status).toBe(200);
    expect(await clientServices(aliceToken)).toEqual([]);
    expect((await get(`/identity-role-attributes`)).body.data).toEqual(['hosts', 'staff']);
    expect((await get(`/identity-role-attributes?filter=${encodeURIComponent('id contains "sta"')}`)).body.data).toEqual(['staff']);
  });

  it('admins see every service with both permissions; non-admins cannot write services', async () => {
    const token = await c.login('alice', 'password1');
    const all = (await c.call('GET', `${CLIENT}/services?limit=100`, { token: admin })).body.data;
    expect(all.length).toBeGreaterThan(1);
    expect(all.every((s: { permissions: string[] }) => s.permissions.join() === 'Bind,Dial')).toBe(true);
    const web = all.find((s: { name: string }) => s.name === 'web');
    expectError(await c.call('PATCH', `${CLIENT}/services/${web.id}`, { token, body: { name: 'x' } }), 401);
    expect((await c.call('PATCH', `${CLIENT}/services/${web.id}`, { token: admin, body: { maxIdleTimeMillis: 5 } })).status).toBe(200);
  });
});

describe('identity service configs', () => {
  it('override the service config of the same type for that identity only', async () => {
    const carol = await c.user('carol');
    await patch(`/identities/${carol}`, { roleAttributes: ['carol'] });
    const base = await created('/configs', { name: 'app-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['app.internal'], portRanges: [{ low: 80, high: 80 }] } });
    const mine = await created('/configs', { name: 'carol-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['app.carol'], portRanges: [{ low: 8080, high: 8080 }] } });
    const app = await created('/services', { name: 'app', encryptionRequired: false, configs: [base] });
    await created('/service-policies', { name: 'carol-app', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#carol'], serviceRoles: ['@app'] });
    const token = await c.login('carol', 'password1');
    const addresses = async () => (await c.call('GET', `${CLIENT}/services/${app}?configTypes=all`, { token })).body.data.config['intercept.v1'].addresses;
    expect(await addresses()).toEqual(['app.internal']);
    // Config types named at login apply without the query parameter.
    const typed = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'carol', password: 'password1', configTypes: ['intercept.v1'] } })).body.data.token;
    expect(Object.keys((await c.call('GET', `${CLIENT}/services/${app}`, { token: typed })).body.data.config)).toEqual(['intercept.v1']);
    // By id too (upstream's id of intercept.v1); a type nobody defined selects nothing.
    const byTypeId = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'carol', password: 'password1', configTypes: ['g7cIWbcGg', 'no-such-type'] } })).body.data.token;
    expect(Object.keys((await c.call('GET', `${CLIENT}/services?filter=${encodeURIComponent('name = "app"')}`, { token: byTypeId })).body.data[0].config)).toEqual(['intercept.v1']);
    expect((await c.call('GET', `${CLIENT}/services/${app}`, { token })).body.data.config).toEqual({});
    expect((await post(`/identities/${carol}/service-configs`, [{ serviceId: 'app', configId: mine }])).status).toBe(200);
    expect(await addresses()).toEqual(['app.carol']);
    // Looked up by name (the grant checked on the named row): the same service, with the same configs,
    // permissions and posture queries, as the list and the get.
    const byName = (await c.call('GET', `${CLIENT}/services?configTypes=all&filter=${encodeURIComponent('name = "app"')}`, { token })).body.data;
    const inList = (await c.call('GET', `${CLIENT}/services?configTypes=all&limit=100`, { token })).body.data.filter((x: { name: string }) => x.name === 'app');
    expect(byName).toEqual(inList);
    expect(byName).toEqual([(await c.call('GET', `${CLIENT}/services/${app}?configTypes=all`, { token })).body.data]);
    expect(byName[0]).toMatchObject({ configs: [base], permissions: ['Dial'], config: { 'intercept.v1': { addresses: ['app.carol'] } } });
    const listed = (await get(`/identities/${carol}/service-configs`)).body.data;
    // The service carries upstream's service links, as its detail does.
    expect(listed[0].service._links).toEqual((await get(`/services/${app}`)).body.data._links);
    expect(Object.keys(listed[0].service._links).sort()).toEqual(['configs', 'self', 'service-edge-router-policies', 'service-policies', 'terminators']);
    expect(listed).toEqual([expect.objectContaining({ serviceId: app, configId: mine, service: expect.objectContaining({ name: 'app' }), config: expect.objectContaining({ name: 'carol-intercept' }) })]);
    expectError(await post(`/identities/${carol}/service-configs`, [{ serviceId: 'nope', configId: mine }]), 400, 'INVALID_FIELD');
    expectError(await c.call('DELETE', `${MGMT}/configs/${mine}`, { token: admin }), 409);
    expect((await c.call('DELETE', `${MGMT}/identities/${carol}/service-configs`, { token: admin, body: [{ serviceId: app, configId: mine }] })).status).toBe(200);
    expect(await addresses()).toEqual(['app.internal']);
  });
});
