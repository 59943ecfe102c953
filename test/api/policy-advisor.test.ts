// GET /policy-advisor (our extension): per identity/service pair, dial/bind, the shared edge routers and
// every reason a pair cannot connect, built up one missing piece at a time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeyAndCsr } from '../../src/model/pki/csr.js';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

describe('policy advisor', () => {
  let c: TestController;
  let token: string;
  const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token, body });
  const advice = async (q: string) => {
    const r = await mg('GET', `/policy-advisor${q}`);
    expect(r.status, r.text).toBe(200);
    return r.body.data as any[]; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const codes = (a: { reasons: { code: string }[] }) => a.reasons.map((r) => r.code).sort();
  let alice: string;
  let web: string;
  let router: string;

  beforeAll(async () => {
    c = await startTestController();
    token = await c.login();
    alice = await c.user('alice');
    await mg('PATCH', `/identities/${alice}`, { roleAttributes: ['staff'] });
    web = (await mg('POST', '/services', { name: 'web', encryptionRequired: true, roleAttributes: ['web'] })).body.data.id;
    router = (await mg('POST', '/edge-routers', { name: 'er-1', roleAttributes: ['public'] })).body.data.id;
  });
  afterAll(() => c.close());

  it('names each missing piece until the pair can dial through an enrolled router', async () => {
    let [pair] = await advice('?identity=alice&service=web');
    expect(pair.identity).toEqual({ id: alice, name: 'alice' });
    expect(pair.service).toEqual({ id: web, name: 'web' });
    expect(pair.dial.allowed).toBe(false);
    expect(codes(pair.dial)).toEqual(['NO_EDGE_ROUTER_POLICY', 'NO_SERVICE_EDGE_ROUTER_POLICY', 'NO_SERVICE_POLICY']);

    await mg('POST', '/service-policies', { name: 'staff-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#web'] });
    await mg('POST', '/edge-router-policies', { name: 'staff-routers', semantic: 'AnyOf', identityRoles: ['#staff'], edgeRouterRoles: ['#public'] });
    [pair] = await advice(`?identity=${alice}&service=${web}`);
    expect(pair.dial.policies.map((p: { name: string }) => p.name)).toEqual(['staff-dial']);
    expect(codes(pair.dial)).toEqual(['NO_SERVICE_EDGE_ROUTER_POLICY']);
    expect(codes(pair.bind)).toEqual(['NO_SERVICE_EDGE_ROUTER_POLICY', 'NO_SERVICE_POLICY']);

    // A service edge router policy over a different router: none in common.
    await mg('POST', '/edge-routers', { name: 'er-2', roleAttributes: ['private'] });
    const serp = (await mg('POST', '/service-edge-router-policies', { name: 'web-routers', semantic: 'AnyOf', serviceRoles: ['#web'], edgeRouterRoles: ['#private'] })).body.data.id;
    [pair] = await advice('?identity=alice&service=web');
    expect(codes(pair.dial)).toEqual(['NO_COMMON_ROUTER']);

    // In common now, but the router has not enrolled.
    await mg('PATCH', `/service-edge-router-policies/${serp}`, { edgeRouterRoles: ['#public', '#private'] });
    [pair] = await advice('?identity=alice&service=web');
    expect(pair.edgeRouters).toEqual([{ id: router, name: 'er-1', usable: false }]);
    expect(codes(pair.dial)).toEqual(['ROUTER_NOT_READY']);

    const token0 = (await mg('GET', `/edge-routers/${router}`)).body.data.enrollmentToken;
    const enrolled = await c.call('POST', `${CLIENT}/enroll/erott`, { body: { token: token0, clientCsr: newKeyAndCsr('er-1').csrPem, serverCsr: newKeyAndCsr('er-1.example', ['er-1.example']).csrPem } });
    expect(enrolled.status, enrolled.text).toBe(200);
    [pair] = await advice('?identity=alice&service=web');
    expect(pair.edgeRouters).toEqual([{ id: router, name: 'er-1', usable: true }]);
    expect(pair.dial).toMatchObject({ allowed: true, reasons: [] });
    expect(pair.bind.allowed).toBe(false);
    expect(codes(pair.bind)).toEqual(['NO_SERVICE_POLICY']);
  });

  it('sees what a dial sees: a service hosted only where the identity\'s routers cannot reach (no chain of links from the embedded router)', async () => {
    const db = c.opened.ctx.store.db;
    const er2 = (await mg('GET', `/edge-routers?filter=${encodeURIComponent('name = "er-2"')}`)).body.data[0].id as string;
    const at = new Date().toISOString();
    const terminator = (id: string, routerId: string) => db.insertInto('terminators').values({ id, createdAt: at, updatedAt: at, tags: '{}', serviceId: web, routerId, binding: 'edge', address: id, identity: '', identitySecret: null, cost: 0, precedence: 'default', hostId: null, sessionId: null, peerData: null }).execute();
    // Hosted on another upstream router: upstream routers link with each other, so nothing to say.
    await terminator('t-upstream', er2);
    let [pair] = await advice('?identity=alice&service=web');
    expect(pair.dial).toMatchObject({ allowed: true, reasons: [] });
    // The identity's only router for it is an embedded router (of a ztc controller): it cannot reach er-2.
    await db.updateTable('routers').set({ controllerId: 'a-controller' }).where('id', '=', router).execute();
    try {
      [pair] = await advice('?identity=alice&service=web');
      expect(codes(pair.dial)).toEqual(['NO_REACHABLE_TERMINATOR']);
      expect(pair.dial.reasons[0].message).toMatch(/hosted on router\(s\) 'er-2', which the identity's router\(s\) for it \('er-1'\) cannot reach/);
      // A link between them (an upstream router dialed the embedded one): reachable.
      await db.insertInto('links').values({ id: 'l-advice', createdAt: at, updatedAt: at, tags: '{}', controllerId: 'a-controller', srcRouterId: er2, dstRouterId: router, protocol: 'tls', dialAddress: 'tls:er-1:3022', iteration: 1, staticCost: 1, cost: 1, srcLatency: 0, dstLatency: 0 }).execute();
      [pair] = await advice('?identity=alice&service=web');
      expect(pair.dial).toMatchObject({ allowed: true, reasons: [] });
      await db.deleteFrom('links').where('id', '=', 'l-advice').execute();
      // Hosted on that router too: reachable again.
      await terminator('t-embedded', router);
      [pair] = await advice('?identity=alice&service=web');
      expect(pair.dial).toMatchObject({ allowed: true, reasons: [] });
    } finally {
      await db.updateTable('routers').set({ controllerId: null }).where('id', '=', router).execute();
      await db.deleteFrom('terminators').where('id', 'in', ['t-upstream', 't-embedded']).execute();
    }
  });

  it('reports posture checks required, failing, passing, and MFA never enrolled', async () => {
    const svc = (await mg('POST', '/services', { name: 'payroll', encryptionRequired: true, roleAttributes: ['web'] })).body.data.id;
    const domain = (await mg('POST', '/posture-checks', { name: 'corp-domain', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['corp'] })).body.data.id;
    await mg('POST', '/service-policies', { name: 'payroll-bind', type: 'Bind', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: [`@${svc}`], postureCheckRoles: ['#corp'] });
    let [pair] = await advice('?identity=alice&service=payroll');
    expect(codes(pair.bind)).toEqual(['POSTURE_CHECKS_REQUIRED']);
    expect(pair.bind.reasons[0].message).toContain('corp-domain');
    expect(pair.dial.allowed).toBe(true);

    const session = await c.login('alice', 'password1');
    const cl = (method: string, path: string, body?: unknown) => c.call(method, `${CLIENT}${path}`, { token: session, body });
    expect((await cl('POST', '/posture-response', { id: domain, typeId: 'DOMAIN', domain: 'home.example' })).status).toBe(201);
    [pair] = await advice('?identity=alice&service=payroll');
    expect(codes(pair.bind)).toEqual(['POSTURE_CHECKS_FAILING']);
    expect((await cl('POST', '/posture-response', { id: domain, typeId: 'DOMAIN', domain: 'corp.example' })).status).toBe(201);
    [pair] = await advice('?identity=alice&service=payroll');
    expect(pair.bind.allowed).toBe(true);

    await mg('POST', '/posture-checks', { name: 'needs-mfa', typeId: 'MFA', roleAttributes: ['corp'] });
    [pair] = await advice('?identity=alice&service=payroll');
    expect(codes(pair.bind)).toEqual(['MFA_MISSING', 'POSTURE_CHECKS_FAILING']);
    expect(pair.bind.reasons.find((r: { code: string }) => r.code === 'POSTURE_CHECKS_FAILING').message).toContain('needs-mfa');
  });

  it('reports disabled and unenrolled identities, and covers every pair at once', async () => {
    const bob = (await mg('POST', '/identities', { name: 'bob', type: 'User', isAdmin: false, roleAttributes: ['staff'] })).body.data.id;
    let [pair] = await advice('?identity=bob&service=web');
    expect(codes(pair.dial)).toEqual(['IDENTITY_NOT_ENROLLED']);
    expect((await mg('POST', `/identities/${alice}/disable`, { durationMinutes: 0 })).status).toBe(200);
    [pair] = await advice('?identity=alice&service=web');
    expect(codes(pair.dial)).toEqual(['IDENTITY_DISABLED']);

    const all = await advice('');
    const identities = (await mg('GET', '/identities')).body.data.length;
    const services = (await mg('GET', '/services')).body.data.length;
    expect(all).toHaveLength(identities * services);
    expect(all.find((p) => p.identity.id === bob && p.service.id === web).dial.reasons.map((r: { code: string }) => r.code)).toEqual(['IDENTITY_NOT_ENROLLED']);
    const ofWeb = await advice('?service=web');
    expect(ofWeb).toHaveLength(identities);
    expect(ofWeb.every((p) => p.service.id === web)).toBe(true);
  });

  it('answers 404 for unknown names, 400 for unknown parameters, 401 without a session', async () => {
    expectError(await mg('GET', '/policy-advisor?identity=nobody'), 404, 'NOT_FOUND');
    expectError(await mg('GET', '/policy-advisor?service=nothing'), 404, 'NOT_FOUND');
    expectError(await mg('GET', '/policy-advisor?identity='), 400);
    expectError(await mg('GET', '/policy-advisor?bogus=1'), 400);
    expectError(await c.call('GET', `${MGMT}/policy-advisor`), 401);
  });
});
