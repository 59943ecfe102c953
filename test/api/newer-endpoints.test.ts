// Endpoints newer than the edge API 0.26.28 that current clients call. ZAC 4.5 reads GET /network-jwts on
// its JWT signers page ("Download Network JWT") and GET /fabric/v1/routers|links|circuits for its dashboard
// and network map (catching failures, but drawing routers only from the fabric list).
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
let user: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  await c.user('newer-user');
  user = await c.login('newer-user', 'password1');
});
afterAll(() => c.close());

describe('GET /network-jwts', () => {
  it('answers one "default" network JWT, without a session, at the root and on both APIs (upstream tests/network_jwt_test.go)', async () => {
    const tokens: string[] = [];
    for (const base of ['', CLIENT, MGMT]) {
      const r = await c.call('GET', `${base}/network-jwts`);
      expect(r.status, base).toBe(200);
      expect(r.body.data, base).toHaveLength(1);
      expect(r.body.data[0].name, base).toBe('default');
      expect(typeof r.body.data[0].token, base).toBe('string');
      expect(r.body.meta.apiVersion).toBeTruthy();
      tokens.push(r.body.data[0].token);
    }
    // Made once, as upstream caches it: every path answers the same token.
    expect(new Set(tokens).size).toBe(1);
  });

  it('is signed by the enrollment key with upstream\'s claims: method network, issuer = subject = the controller (tests/enrollment_network_test.go)', async () => {
    const token = (await c.call('GET', `${CLIENT}/network-jwts`, { token: user })).body.data[0].token as string;
    const jwks = (await c.call('GET', `${CLIENT}/enroll/jwks`)).body;
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks));
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS256', kid: jwks.keys[0].kid });
    const url = `https://localhost:${c.config.port}/`;
    expect(payload).toMatchObject({ em: 'network', iss: url, sub: url, aud: ['openziti-enroller'] });
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    // Not a one-time token: nothing to redeem, nothing that expires.
    expect(payload.exp).toBeUndefined();
    const enrollments = (await c.call('GET', `${MGMT}/enrollments?limit=500`, { token: admin })).body.data as { token?: string }[];
    expect(enrollments.some((e) => e.token === payload.jti)).toBe(false);
  });

  it('is listed in the OpenAPI documents of both APIs', async () => {
    for (const [base, id] of [[CLIENT, 'edge-client'], [MGMT, 'edge-management']]) {
      const doc = JSON.parse((await c.call('GET', `${base}/specs/${id}/spec`)).body.data);
      expect(doc.paths[`${base}/network-jwts`].get.operationId).toBe('listNetworkJWTs');
      expect(doc.paths[`${base}/network-jwts`].get.security).toBeUndefined();
    }
  });
});

describe('GET /fabric/v1/routers|links|circuits|terminators|services', () => {
  it('lists every router, edge and transit, not connected while no router is', async () => {
    const edge = await c.call('POST', `${MGMT}/edge-routers`, { token: admin, body: { name: 'fabric-edge', roleAttributes: ['public'] } });
    const transit = await c.call('POST', `${MGMT}/transit-routers`, { token: admin, body: { name: 'fabric-transit', cost: 7 } });
    expect(edge.status, edge.text).toBe(201);
    expect(transit.status, transit.text).toBe(201);
    // ZAC asks for limit=1000 (more than the page maximum, so it is clamped, not refused).
    const r = await c.call('GET', '/fabric/v1/routers?limit=1000', { token: admin });
    expect(r.status, r.text).toBe(200);
    const byName = Object.fromEntries(r.body.data.map((x: { name: string }) => [x.name, x]));
    expect(byName['fabric-edge']).toMatchObject({ id: edge.body.data.id, connected: false, cost: 0, noTraversal: false, disabled: false, listenerAddresses: [], ctrlChanListeners: {} });
    expect(byName['fabric-transit']).toMatchObject({ id: transit.body.data.id, connected: false, cost: 7 });
    // null until it enrolls, as upstream's fabric API (a pointer there).
    expect(byName['fabric-edge'].fingerprint).toBeNull();
    expect(r.body.meta.pagination.totalCount).toBe(2);
    const filtered = await c.call('GET', `/fabric/v1/routers?filter=${encodeURIComponent('name = "fabric-transit"')}`, { token: admin });
    expect(filtered.body.data.map((x: { name: string }) => x.name)).toEqual(['fabric-transit']);
    expectError(await c.call('GET', `/fabric/v1/routers?filter=${encodeURIComponent('name = ')}`, { token: admin }), 400);
  });

  it('lists no links and no circuits, as well-formed pages', async () => {
    for (const path of ['/fabric/v1/links?limit=1000', '/fabric/v1/circuits?limit=1000', '/fabric/v1/links']) {
      const r = await c.call('GET', path, { token: admin });
      expect(r.status, path).toBe(200);
      expect(r.body.data, path).toEqual([]);
      expect(r.body.meta.pagination, path).toMatchObject({ offset: 0, totalCount: 0 });
    }
    // Upstream's paging rules: a negative offset is 0; a limit that is not a whole number is a 400.
    expectError(await c.call('GET', '/fabric/v1/links?limit=1.5', { token: admin }), 400);
  });

  it('shows terminators in the fabric shape, hostId and instanceId "" when unset (upstream\'s `ziti edge validate service-hosting` reads *hostId)', async () => {
    const svc = await c.call('POST', `${MGMT}/services`, { token: admin, body: { name: 'fabric-svc', encryptionRequired: true } });
    expect(svc.status, svc.text).toBe(201);
    const t = await c.call('POST', `${MGMT}/terminators`, { token: admin, body: { service: 'fabric-svc', router: 'fabric-edge', binding: 'edge_transport', address: 'tcp:localhost:9000' } });
    expect(t.status, t.text).toBe(201);
    const r = await c.call('GET', `/fabric/v1/terminators/${t.body.data.id}`, { token: admin });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ serviceId: svc.body.data.id, hostId: '', instanceId: '', binding: 'edge_transport', address: 'tcp:localhost:9000', cost: 0, dynamicCost: 0, precedence: 'default' });
    expect(r.body.data).not.toHaveProperty('identity');
    expect(r.body.data.router).toMatchObject({ entity: 'routers', name: 'fabric-edge' });
    expect(Object.keys(r.body.data.router._links).sort()).toEqual(['self', 'terminators']);
    expect(Object.keys(r.body.data.service._links).sort()).toEqual(['self', 'terminators']);
    // The edge API keeps its own shape.
    const edge = await c.call('GET', `${MGMT}/terminators/${t.body.data.id}`, { token: admin });
    expect(edge.body.data.identity).toBe('');
    await c.call('DELETE', `${MGMT}/terminators/${t.body.data.id}`, { token: admin });
  });

  it('is for admins, as upstream\'s fabric API; other fabric paths are a clean 404', async () => {
    for (const path of ['/fabric/v1/routers', '/fabric/v1/links', '/fabric/v1/circuits', '/fabric/v1/terminators', '/fabric/v1/services']) {
      expectError(await c.call('GET', path), 401);
      expectError(await c.call('GET', path, { token: user }), 401);
    }
    for (const path of ['/fabric/v1/cluster/list-members', '/fabric/v1/inspections']) expectError(await c.call('GET', path, { token: admin }), 404, 'NOT_FOUND');
  });

  it('has its own OpenAPI document, listed with the others', async () => {
    expect((await c.call('GET', `${MGMT}/specs`)).body.data.map((s: { id: string }) => s.id)).toContain('fabric');
    const doc = JSON.parse((await c.call('GET', `${MGMT}/specs/fabric/spec`)).body.data);
    expect(Object.keys(doc.paths).sort()).toEqual(['circuits', 'links', 'routers', 'services', 'terminators'].flatMap((p) => [`/fabric/v1/${p}`, `/fabric/v1/${p}/{id}`]));
    expect(doc.paths['/fabric/v1/routers'].get.operationId).toBe('listRouters');
  });
});
