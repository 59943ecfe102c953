// Fields and small operations the 2.x Edge APIs (document 0.35.0) added that 2.x clients read: the router
// capability names, identities' connection status, routers' 2.x fields, and /version as 2.x reads it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routerCapabilityNames } from '../../src/model/router-capabilities.js';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });
const spec = async (base: string, id: string) => JSON.parse((await c.call('GET', `${base}/specs/${id}/spec`)).body.data);

beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

describe('GET /enumerated-router-capabilities', () => {
  it('lists the router capabilities by bit, without a session, on both APIs (upstream 2.1)', async () => {
    for (const base of [CLIENT, MGMT]) {
      const r = await c.call('GET', `${base}/enumerated-router-capabilities`);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data).toEqual(['MULTI_CHANNEL', 'CONNECT_V2', 'SERVICE_SUBSCRIPTIONS', 'POSTURE_CHECKS', 'BIND_SUCCESS']);
      const doc = await spec(base, base === CLIENT ? 'edge-client' : 'edge-management');
      expect(doc.paths[`${base}/enumerated-router-capabilities`].get.operationId).toBe('listEnumeratedRouterCapabilities');
    }
  });

  it('names the bits of a capability mask as upstream renders them', () => {
    // A 2.0.3 router sends bit 1 only; a 2.1 router bits 1, 2, 4, 5, 6 and 62 (RouterDataModel, unnamed).
    expect(routerCapabilityNames(2)).toEqual(['MULTI_CHANNEL']);
    expect(routerCapabilityNames('4611686018427388022')).toEqual(['MULTI_CHANNEL', 'CONNECT_V2', 'SERVICE_SUBSCRIPTIONS', 'POSTURE_CHECKS', 'BIND_SUCCESS']);
    expect(routerCapabilityNames(0)).toEqual([]);
    expect(routerCapabilityNames(null)).toEqual([]);
    expect(routerCapabilityNames(8)).toEqual([]);
  });
});

describe('identity detail (2.x fields)', () => {
  it('has edgeRouterConnectionStatus, interfaces and permissions, in lists, details and the current identity', async () => {
    const id = await c.user('ident-2x');
    const user = await c.login('ident-2x', 'password1');
    const detail = (await mg('GET', `/identities/${id}`)).body.data;
    // ztc does not learn SDKs' router connections yet: unknown, and not connected as far as it knows.
    expect(detail).toMatchObject({ edgeRouterConnectionStatus: 'unknown', hasEdgeRouterConnection: false, interfaces: [], permissions: [] });
    const listed = (await mg('GET', `/identities?filter=${encodeURIComponent('name = "ident-2x"')}`)).body.data[0];
    expect(listed).toMatchObject({ edgeRouterConnectionStatus: 'unknown', interfaces: [], permissions: [] });
    for (const base of [CLIENT, MGMT]) {
      const own = (await c.call('GET', `${base}/current-identity`, { token: user })).body.data;
      expect(own, base).toMatchObject({ id, edgeRouterConnectionStatus: 'unknown', interfaces: [], permissions: [] });
    }
    const ro = await mg('POST', '/identities', { name: 'ident-2x-ro', type: 'User', isAdmin: false, permissions: ['admin_readonly'] });
    expect((await mg('GET', `/identities/${ro.body.data.id}`)).body.data.permissions).toEqual(['admin_readonly']);
  });
});

describe('routers (2.x fields)', () => {
  it('take ctrlChanListeners and configs on create, update and patch, and show them with capabilities, mask, interfaces and version', async () => {
    const type = (await mg('POST', '/config-types', { name: 'router-cfg-type', schema: {} })).body.data.id;
    const cfg = (await mg('POST', '/configs', { name: 'router-cfg', configTypeId: type, data: { a: 1 } })).body.data.id;
    const made = await mg('POST', '/edge-routers', { name: 'er-2x', roleAttributes: ['public'], ctrlChanListeners: { 'tls:ctrl.example:6262': ['default'] }, configs: [cfg] });
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id as string;
    const detail = (await mg('GET', `/edge-routers/${id}`)).body.data;
    expect(detail).toMatchObject({ ctrlChanListeners: { 'tls:ctrl.example:6262': ['default'] }, configs: [cfg], interfaces: [], capabilities: [], capabilitiesMask: 0, version: '' });
    expect((await mg('PATCH', `/edge-routers/${id}`, { configs: [] })).status).toBe(200);
    expect((await mg('GET', `/edge-routers/${id}`)).body.data).toMatchObject({ configs: [], ctrlChanListeners: { 'tls:ctrl.example:6262': ['default'] } });
    expect((await mg('PUT', `/edge-routers/${id}`, { name: 'er-2x', roleAttributes: ['public'] })).status).toBe(200);
    expect((await mg('GET', `/edge-routers/${id}`)).body.data).toMatchObject({ configs: [], ctrlChanListeners: {} });
    const bad = await mg('PATCH', `/edge-routers/${id}`, { configs: ['no-such-config'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.cause.field).toBe('configs');
    // Transit routers and the fabric API too (routerCreate/Detail).
    const tr = await mg('POST', '/transit-routers', { name: 'tr-2x', ctrlChanListeners: { 'tls:t.example:6262': [] } });
    expect(tr.status, tr.text).toBe(201);
    expect((await mg('GET', `/routers/${tr.body.data.id}`)).body.data).toMatchObject({ ctrlChanListeners: { 'tls:t.example:6262': [] }, configs: [], interfaces: [] });
    expect((await c.call('GET', `/fabric/v1/routers/${tr.body.data.id}`, { token: admin })).body.data.ctrlChanListeners).toEqual({ 'tls:t.example:6262': [] });
  });

  it('shows what a router announced: its capabilities by name (from the stored mask) and its version, to admins and clients', async () => {
    const id = (await mg('POST', '/edge-routers', { name: 'er-announced', roleAttributes: ['announced'] })).body.data.id as string;
    const db = c.opened.ctx.store.db;
    // As a 2.1 router's hello leaves them (the control channel stores them).
    await db.updateTable('routers').set({ isVerified: 1, versionInfo: 'v2.1.0|abc|2026-08-21|linux|amd64', capabilitiesMask: '4611686018427388022' }).where('id', '=', id).execute();
    const names = ['MULTI_CHANNEL', 'CONNECT_V2', 'SERVICE_SUBSCRIPTIONS', 'POSTURE_CHECKS', 'BIND_SUCCESS'];
    const detail = (await mg('GET', `/edge-routers/${id}`)).body.data;
    expect(detail).toMatchObject({ capabilities: names, version: 'v2.1.0' });
    // A JSON number: past 2^53 it is read rounded (here to bit 62 alone); the names above are exact.
    expect(detail.capabilitiesMask).toBe(2 ** 62);
    const uid = await c.user('er-client');
    await mg('PATCH', `/identities/${uid}`, { roleAttributes: ['er-clients'] });
    await mg('POST', '/edge-router-policies', { name: 'er-announced-erp', semantic: 'AnyOf', identityRoles: ['#er-clients'], edgeRouterRoles: ['#announced'] });
    const token = await c.login('er-client', 'password1');
    const mine = (await c.call('GET', `${CLIENT}/current-identity/edge-routers`, { token })).body.data;
    expect(mine).toEqual([expect.objectContaining({ id, capabilities: names, version: 'v2.1.0' })]);
    // A service's routers and a session's (the session form) too.
    const svc = (await mg('POST', '/services', { name: 'er-svc', roleAttributes: ['er-svc'], encryptionRequired: true })).body.data.id;
    await mg('POST', '/service-policies', { name: 'er-svc-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#er-clients'], serviceRoles: ['#er-svc'] });
    await mg('POST', '/service-edge-router-policies', { name: 'er-svc-serp', semantic: 'AnyOf', serviceRoles: ['#er-svc'], edgeRouterRoles: ['#announced'] });
    const viaService = (await c.call('GET', `${CLIENT}/services/${svc}/edge-routers`, { token })).body.data.edgeRouters;
    expect(viaService).toEqual([expect.objectContaining({ name: 'er-announced', capabilities: names, version: 'v2.1.0' })]);
    const session = await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: svc, type: 'Dial' } });
    expect(session.status, session.text).toBe(201);
    expect(session.body.data.edgeRouters).toEqual([expect.objectContaining({ name: 'er-announced', capabilities: names, version: 'v2.1.0' })]);
  });
});

describe('config types (2.1 target)', () => {
  it('take target service, router or other at create (service when not given or null), fixed after; filterable', async () => {
    const made = async (body: Record<string, unknown>) => mg('POST', '/config-types', { schema: {}, ...body });
    const plain = await made({ name: 'ct-target-default' });
    expect(plain.status, plain.text).toBe(201);
    const router = await made({ name: 'ct-target-router', target: 'router' });
    expect(router.status, router.text).toBe(201);
    expect((await made({ name: 'ct-target-null', target: null })).status).toBe(201);
    expect((await made({ name: 'ct-target-other', target: 'other' })).status).toBe(201);
    const bad = await made({ name: 'ct-target-bad', target: 'tunneler' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.cause.field).toBe('target');
    const target = async (id: string) => (await mg('GET', `/config-types/${id}`)).body.data.target;
    expect(await target(plain.body.data.id)).toBe('service');
    expect(await target(router.body.data.id)).toBe('router');
    // Upstream's update and patch bodies have no target: a client's copy of the whole type is taken, the target kept.
    expect((await mg('PUT', `/config-types/${router.body.data.id}`, { name: 'ct-target-router', schema: {}, target: 'service' })).status).toBe(200);
    expect((await mg('PATCH', `/config-types/${router.body.data.id}`, { target: 'other' })).status).toBe(200);
    expect(await target(router.body.data.id)).toBe('router');
    // The built-in types are for services.
    const listed = (await mg('GET', `/config-types?filter=${encodeURIComponent('target = "router"')}&limit=100`)).body.data.map((t: { name: string }) => t.name);
    expect(listed).toEqual(['ct-target-router']);
    expect((await mg('GET', `/config-types?filter=${encodeURIComponent('name = "intercept.v1"')}`)).body.data[0].target).toBe('service');
  });
});

describe('GET /version as 2.x clients read it', () => {
  it('lists every API ztc serves under upstream 2.x keys: edge-client, edge-management, fabric, health-checks and the legacy edge', async () => {
    for (const url of ['/version', `${CLIENT}/version`, `${MGMT}/version`]) {
      const v = (await c.call('GET', url)).body.data;
      expect(Object.keys(v.apiVersions), url).toEqual(expect.arrayContaining(['edge', 'edge-client', 'edge-management', 'fabric', 'health-checks']));
      expect(v.apiVersions.fabric.v1.path).toBe('/fabric/v1');
      expect(v.apiVersions.fabric.v1.apiBaseUrls[0]).toMatch(/^https:\/\/.+\/fabric\/v1$/);
      expect(v.apiVersions['health-checks'].v1.path).toBe('/health-checks');
      // The legacy key is the client API's, as upstream copies it.
      expect(v.apiVersions.edge).toEqual(v.apiVersions['edge-client']);
      // Never HA_CONTROLLER: ztc's controllers share a database, not a raft cluster.
      expect(v.capabilities).not.toContain('HA_CONTROLLER');
    }
    // What each advertised path answers.
    expect((await c.call('GET', '/health-checks')).status).toBe(200);
    expect((await c.call('GET', '/fabric/v1/routers', { token: admin })).status).toBe(200);
  });
});
