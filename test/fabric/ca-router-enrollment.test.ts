// Routers that enroll themselves (ztc's, ziti#1390; issue 47 item 2): a CA created and verified through the
// Management API and marked for router enrollment lets a router that presents a certificate it issued say
// hello on the control channel: the router is created (named and identified by the certificate's common
// name, with the CA's edge router role attributes), enrolled with that certificate, and attaches. Test
// routers written from the reference (1.1 and 2.x hellos), certificates from a test CA.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCa } from '../helpers/certs.js';
import { startNetwork, type TestNetwork } from '../helpers/network.js';
import { connectRouter, connectRouter2x, fp, T, type EnrolledRouter } from '../peers/ctrl-router.js';
import type { EdgePeer } from '../peers/edge-sdk.js';

let n: TestNetwork;
let ctrlPort: number;
const ca = new TestCa('Factory CA');
let caId = '';
const peers: EdgePeer[] = [];
/** The certificates routers were enrolled with, kept for their reconnects. */
const issued = new Map<string, EnrolledRouter>();
beforeAll(async () => {
  n = await startNetwork();
  ctrlPort = n.c.running.fabric!.ctrlPort!;
  const made = await n.api('POST', '/cas', {
    name: ca.name, certPem: ca.pem, identityRoles: [], isAuthEnabled: false, isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: false,
    isEdgeRouterEnrollmentEnabled: true, edgeRouterRoles: ['factory', 'edge-east'],
  });
  expect(made.status, made.text).toBe(201);
  caId = made.body.data.id;
}, 60_000);
afterAll(async () => {
  for (const p of peers) p.close();
  await n.close();
});

/** A router's certificate and key from the CA, under `cn`. */
const fromCa = (cn: string, issuer = ca): EnrolledRouter => ({ id: cn, name: cn, ...(({ certPem, keyPem }) => ({ cert: certPem, key: keyPem }))(issuer.issue(cn)) });

/** Hello until the controller answers (it reads the CAs marked for router enrollment every 2 s), or `ms` pass. */
async function helloUntilAnswered(r: EnrolledRouter, ms = 8000, v2 = false) {
  const until = Date.now() + ms;
  for (;;) {
    const c = await (v2 ? connectRouter2x(ctrlPort, r) : connectRouter(ctrlPort, r)).catch(() => ({ p: undefined, result: undefined }));
    if (c.result && c.p) {
      peers.push(c.p);
      return c;
    }
    c.p?.close();
    if (Date.now() > until) return c;
    await new Promise((res) => setTimeout(res, 500));
  }
}

describe('a CA marked for router enrollment', () => {
  it('is shown with its ztc fields; its routers are refused until it is verified', async () => {
    const d = (await n.api('GET', `/cas/${caId}`)).body.data;
    expect(d).toMatchObject({ isVerified: false, isEdgeRouterEnrollmentEnabled: true, edgeRouterRoles: ['edge-east', 'factory'] });
    expect((await n.api('GET', `/cas?filter=${encodeURIComponent('isEdgeRouterEnrollmentEnabled = true')}`)).body.data.map((x: { id: string }) => x.id)).toEqual([caId]);
    const early = await helloUntilAnswered(fromCa('router-early'), 2500);
    expect(early.result).toBeUndefined();
    expect((await n.api('GET', '/edge-routers/router-early')).status).toBe(404);
    // Verified as any CA is: a certificate it signed whose common name is the verification token.
    const v = await n.c.call('POST', `/edge/management/v1/cas/${caId}/verify`, { token: await n.c.login(), body: ca.issue(d.verificationToken).certPem, contentType: 'text/plain' });
    expect(v.status, v.text).toBe(200);
  });

  it('a 1.x router with a certificate it issued is created, enrolled with that certificate and attached', async () => {
    const r = fromCa('factory-router-1');
    issued.set(r.id, r);
    const c = await helloUntilAnswered(r);
    expect(c.result, 'the hello is answered').toBeDefined();
    expect(c.result!.headers.get(1)!.readInt32LE(0)).toBe(-1);
    // It is a router like any other: the ServerHello follows.
    const hello = await c.p!.next((f) => f.type === T.ServerHello);
    expect(hello).toBeDefined();
    const d = (await n.api('GET', '/edge-routers/factory-router-1')).body.data;
    expect(d).toMatchObject({ id: 'factory-router-1', name: 'factory-router-1', isVerified: true, fingerprint: fp(r.cert), roleAttributes: ['edge-east', 'factory'], enrollmentJwt: null, tags: { 'ztc.enrolledByCa': caId } });
    await expect.poll(async () => (await n.api('GET', '/edge-routers/factory-router-1')).body.data.isOnline, { timeout: 5000 }).toBe(true);
    // Its role attributes put it in policies by attribute.
    const policy = await n.api('POST', '/edge-router-policies', { name: 'factory-routers', identityRoles: ['#all'], edgeRouterRoles: ['#factory'], semantic: 'AnyOf' });
    expect(policy.status, policy.text).toBe(201);
    expect((await n.api('GET', `/edge-router-policies/${policy.body.data.id}/edge-routers`)).body.data.map((x: { id: string }) => x.id)).toEqual(['factory-router-1']);
  });

  it('the router connects again with the same certificate and is not created twice; another certificate for its id is refused', async () => {
    peers.pop()?.close();
    const again = await helloUntilAnswered(issued.get('factory-router-1')!);
    expect(again.result).toBeDefined();
    expect((await n.api('GET', `/edge-routers?filter=${encodeURIComponent('name contains "factory-router-1"')}`)).body.data).toHaveLength(1);
    peers.pop()?.close();
    const impostor = await helloUntilAnswered(fromCa('factory-router-1'), 1500);
    expect(impostor.result).toBeUndefined();
  });

  it('a 2.x router enrolls the same way', async () => {
    const c = await helloUntilAnswered(fromCa('factory-router-2x'), 8000, true);
    expect(c.result).toBeDefined();
    expect((await n.api('GET', '/edge-routers/factory-router-2x')).body.data).toMatchObject({ isVerified: true, roleAttributes: ['edge-east', 'factory'] });
  });

  it('refuses a hello naming another id than the certificate, a CA without the mark, and turning the mark off stops new ones', async () => {
    const r = fromCa('factory-router-3');
    const lying = await connectRouter(ctrlPort, r, { id: 'someone-else' });
    expect(lying.result).toBeUndefined();
    lying.p.close();
    expect((await n.api('GET', '/edge-routers/someone-else')).status).toBe(404);
    expect((await n.api('GET', '/edge-routers/factory-router-3')).status).toBe(404);

    const plain = new TestCa('Plain CA');
    const made = await n.api('POST', '/cas', { name: plain.name, certPem: plain.pem, identityRoles: [], isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: false });
    expect(made.status, made.text).toBe(201);
    const token = (await n.api('GET', `/cas/${made.body.data.id}`)).body.data.verificationToken;
    expect((await n.c.call('POST', `/edge/management/v1/cas/${made.body.data.id}/verify`, { token: await n.c.login(), body: plain.issue(token).certPem, contentType: 'text/plain' })).status).toBe(200);
    expect((await n.api('GET', `/cas/${made.body.data.id}`)).body.data).toMatchObject({ isEdgeRouterEnrollmentEnabled: false, edgeRouterRoles: [] });
    const other = await helloUntilAnswered(fromCa('plain-router', plain), 3000);
    expect(other.result).toBeUndefined();

    // A PUT from a client that does not know the ztc fields leaves them; a patch turns the mark off.
    const d = (await n.api('GET', `/cas/${caId}`)).body.data;
    expect((await n.api('PUT', `/cas/${caId}`, { name: d.name, identityRoles: [], identityNameFormat: d.identityNameFormat, isAuthEnabled: false, isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: false })).status).toBe(200);
    expect((await n.api('GET', `/cas/${caId}`)).body.data).toMatchObject({ isEdgeRouterEnrollmentEnabled: true, edgeRouterRoles: ['edge-east', 'factory'] });
    expect((await n.api('PATCH', `/cas/${caId}`, { isEdgeRouterEnrollmentEnabled: false })).status).toBe(200);
    await new Promise((res) => setTimeout(res, 2500));
    const late = await helloUntilAnswered(fromCa('factory-router-4'), 1000);
    expect(late.result).toBeUndefined();
    expect((await n.api('GET', '/edge-routers/factory-router-4')).status).toBe(404);
  });
});
