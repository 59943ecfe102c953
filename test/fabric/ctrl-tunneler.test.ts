// An upstream router's own tunneler (ER/T: its `tunnel` listener binding) on the control channel, from the
// test router of test/peers (messages 20400-20414 and 20220/20221 as edge_ctrl.proto has them): the API
// session kept for the router's Router identity, its service list with host.v1 configs, terminators it
// creates for services that identity may Bind (a 1.x router told its Bind session, a 2.x router none),
// refused with the missing policy named, routed to by SDK dials (the Route's egress is the tunnel binding),
// circuits for connections it intercepts, and its terminators ended when the identity loses its grant.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { startController, type Running } from '../../src/server/controller.js';
import { testConfig } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, connectRouter2x, enrollRouter, fp, RdmSchemas, readBytesMap, strings, T, T2, TT, TUNNELER_CONFIG_TYPES, TunnelPb, type EnrolledRouter } from '../peers/ctrl-router.js';
import { CT, EdgePeer, H, le32, type Frame } from '../peers/edge-sdk.js';

let n: TestNetwork;
let client: Member;
let ctrlPort: number;
const logged: { msg: string; reason?: string; service?: string }[] = [];
beforeAll(async () => {
  n = await startNetwork({}, { logger: { level: 'info', stream: { write: (line: string) => void logged.push(JSON.parse(line)) } } as never });
  ctrlPort = n.c.running.fabric!.ctrlPort!;
  client = await n.identity('ert-client', ['ert-echo-clients', 'ert-v2-clients']);
}, 60_000);
/** The controller started again on the same data dir (the last test), when it was. */
let second: Running | undefined;
afterAll(async () => {
  if (!second) return n?.close();
  await second.close();
  fs.rmSync(n.c.dataDir, { recursive: true, force: true });
});

const text = (f: Frame) => f.body.toString('utf8');
const edgeCode = (f: Frame) => f.headers.get(1014)?.readUInt32LE(0);

/** An edge router with its tunneler on (upstream's `isTunnelerEnabled`), enrolled; its Router identity's id. */
async function tunnelerRouter(name: string): Promise<{ router: EnrolledRouter; identityId: string }> {
  const router = await enrollRouter(n, name);
  const patched = await n.api('PATCH', `/edge-routers/${router.id}`, { isTunnelerEnabled: true });
  expect(patched.status, patched.text).toBe(200);
  const found = await n.api('GET', `/identities?filter=${encodeURIComponent(`name = "${name}"`)}`);
  const identity = found.body.data[0];
  expect(identity.typeId ?? identity.type?.name).toMatch(/Router/);
  return { router, identityId: identity.id };
}

/** A service with a host.v1 config (what the tunneler hosts), and its Bind and Dial policies (n.service). */
async function hostedService(name: string) {
  const cfg = await n.api('POST', '/configs', { name: `${name}-host`, configTypeId: 'NH5p4FpGR', data: { protocol: 'tcp', address: '127.0.0.1', port: 7 } });
  expect(cfg.status, cfg.text).toBe(201);
  const id = await n.service(name);
  expect((await n.api('PATCH', `/services/${id}`, { configs: [cfg.body.data.id] })).status).toBe(200);
  return id;
}

/** The ids of the terminators whose host is the identity. */
async function hostedBy(identityId: string): Promise<string[]> {
  return (await n.api('GET', `/terminators?filter=${encodeURIComponent(`hostId = "${identityId}"`)}`)).body.data.map((t: { id: string }) => t.id);
}

async function request(p: EdgePeer, type: number, body: Buffer): Promise<Frame> {
  return p.replyTo(p.send(type, [], body));
}

describe('a 1.x router\'s tunneler', () => {
  let router: EnrolledRouter;
  let identityId: string;
  let p: EdgePeer;
  let service: string;
  let terminatorSession = '';
  /** The circuit of a connection the tunneler intercepted (ended when its Dial grant goes). */
  let interceptCircuit = '';
  beforeAll(async () => {
    ({ router, identityId } = await tunnelerRouter('ert-1'));
    service = await hostedService('ert-echo');
    ({ p } = await connectRouter(ctrlPort, router));
  });
  afterAll(() => p?.close());

  it('is refused an API session when the router\'s tunneler is off: tunneling not enabled (code 7)', async () => {
    const off = await enrollRouter(n, 'ert-off');
    const { p: q } = await connectRouter(ctrlPort, off);
    const r = await request(q, TT.CreateApiSession, encode(TunnelPb.CreateApiSessionRequest, { configTypes: TUNNELER_CONFIG_TYPES }));
    expect(r.type).toBe(T.Error);
    expect(edgeCode(r)).toBe(7);
    expect(text(r)).toMatch(/tunneling not enabled.*isTunnelerEnabled/);
    q.close();
  });

  it('gets the API session the controller keeps for the router\'s identity; the token is a working API session', async () => {
    const r = await request(p, TT.CreateApiSession, encode(TunnelPb.CreateApiSessionRequest, { envInfo: { os: 'linux', arch: 'amd64' }, sdkInfo: { appId: 'ziti-router', type: 'ziti-router:tunnel' }, configTypes: TUNNELER_CONFIG_TYPES }));
    expect(r.type, text(r)).toBe(TT.CreateApiSessionResponse);
    const s = decode(TunnelPb.CreateApiSessionResponse, r.body);
    expect(s).toMatchObject({ identityId, identityName: 'ert-1' });
    expect(s.token).toBeTruthy();
    expect(s.refreshIntervalSeconds).toBeGreaterThan(0);
    const me = await n.c.call('GET', '/edge/client/v1/current-identity', { token: s.token });
    expect(me.status).toBe(200);
    expect(me.body.data.id).toBe(identityId);
    // What the router said of itself is on its identity, as an SDK's login records it.
    expect((await n.api('GET', `/identities/${identityId}`)).body.data).toMatchObject({ envInfo: { os: 'linux', arch: 'amd64' }, sdkInfo: { appId: 'ziti-router', type: 'ziti-router:tunnel' } });
    // Asked again (the router restarted its tunneler): the same session.
    const again = decode(TunnelPb.CreateApiSessionResponse, (await request(p, TT.CreateApiSession, encode(TunnelPb.CreateApiSessionRequest, {}))).body);
    expect(again.sessionId).toBe(s.sessionId);
  });

  it('lists the services its identity may use, with their host.v1 config; a list it holds is not sent again', async () => {
    expect((await n.api('PATCH', `/identities/${identityId}`, { roleAttributes: ['ert-echo-hosts'] })).status).toBe(200);
    p.send(TT.ListServices, []);
    const list = decode(TunnelPb.ServicesList, (await p.next((f) => f.type === TT.ServiceList)).body);
    const echo = (list.services as Record<string, any>[]).find((s) => s.id === service)!;
    expect(echo).toMatchObject({ name: 'ert-echo', permissions: ['Bind'] });
    expect(JSON.parse(echo.config.toString())).toEqual({ 'host.v1': { protocol: 'tcp', address: '127.0.0.1', port: 7 } });
    expect(list.lastUpdate.length).toBeGreaterThan(0);
    // With the token it holds: nothing; with another, the list (the one after the first answer is this one).
    p.send(TT.ListServices, [], list.lastUpdate);
    p.send(TT.ListServices, [], Buffer.from('stale'));
    const second = decode(TunnelPb.ServicesList, (await p.next((f) => f.type === TT.ServiceList)).body);
    expect(second.lastUpdate).toEqual(list.lastUpdate);
    expect(p.inbox.filter((f) => f.type === TT.ServiceList)).toHaveLength(0);
  });

  it('hosts a service its identity may Bind: the terminator has binding tunnel and the router is told its Bind session', async () => {
    const address = 'ert-terminator-1';
    const r = await request(p, TT.CreateTunnelTerminator, encode(TunnelPb.CreateTunnelTerminatorRequest, { serviceName: 'ert-echo', address, cost: 3, precedence: 1, startTime: 1234n }));
    expect(r.type, text(r)).toBe(TT.CreateTunnelTerminatorResponse);
    const answer = decode(TunnelPb.CreateTunnelTerminatorResponse, r.body);
    expect(answer).toMatchObject({ terminatorId: address, startTime: 1234n });
    expect(answer.session.sessionId).toBeTruthy();
    // Not shaped like a JWT: a 1.1 router listens for the removal of such tokens only.
    expect(answer.session.token.split('.')).toHaveLength(1);
    terminatorSession = answer.session.token;
    const t = (await n.api('GET', `/terminators/${address}`)).body.data;
    expect(t).toMatchObject({ binding: 'tunnel', routerId: router.id, serviceId: service, cost: 3, precedence: 'required' });
    expect(await hostedBy(identityId)).toContain(address);
    const sessions = await n.api('GET', `/sessions?filter=${encodeURIComponent(`id = "${answer.session.sessionId}"`)}`);
    expect(sessions.body.data[0]).toMatchObject({ type: 'Bind', identityId, serviceId: service });
  });

  it('is routed to by an SDK\'s dial: the Route\'s egress is the tunnel binding, the key comes back from the egress', async () => {
    const token = await n.session(client, service, 'Dial');
    const seq = p.send(T.CreateCircuitV2, [[11, Buffer.from(token)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)], [10, bytesMap([[1003, Buffer.alloc(32, 4)]])]]);
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    expect(route.egress).toMatchObject({ binding: 'tunnel', destination: 'ert-terminator-1' });
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])], [1003, Buffer.alloc(32, 5)]], Buffer.from(route.circuitId));
    const answer = await p.replyTo(seq);
    expect(answer.type, text(answer)).toBe(T.CreateCircuitV2Response);
    expect(readBytesMap(answer.headers.get(10)!).get(1003)).toEqual(Buffer.alloc(32, 5));
  });

  it('refuses a terminator its identity may not Bind, naming the missing policy in the log (a 1.x router is not answered, as upstream)', async () => {
    await hostedService('ert-nobind');
    const ask = () => p.send(TT.CreateTunnelTerminator, [], encode(TunnelPb.CreateTunnelTerminatorRequest, { serviceName: 'ert-nobind', address: 'ert-terminator-2' }));
    const refusal = (reason: RegExp) => expect.poll(() => logged.some((l) => l.msg === 'ctrl: refused a terminator of the router\'s tunneler' && reason.test(l.reason ?? '')), { timeout: 5000 }).toBe(true);
    ask();
    await refusal(/no Bind service policy grants the router's identity 'ert-1' service 'ert-nobind'/);
    // Granted, but no service edge router policy gives the service this router.
    expect((await n.api('PATCH', `/identities/${identityId}`, { roleAttributes: ['ert-echo-hosts', 'ert-nobind-hosts'] })).status).toBe(200);
    // The hosted service keeps its router throughout (else the access watch, seeing it without one, ends its terminator).
    await n.api('POST', '/service-edge-router-policies', { name: 'echo-only', serviceRoles: ['#ert-echo', '#ert-v2', '#ert-kept'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' });
    const all = (await n.api('GET', `/service-edge-router-policies?filter=${encodeURIComponent('name = "all"')}`)).body.data[0];
    await n.api('DELETE', `/service-edge-router-policies/${all.id}`);
    try {
      ask();
      await refusal(/no service edge router policy gives service 'ert-nobind' the router 'ert-1'/);
    } finally {
      await n.api('POST', '/service-edge-router-policies', { name: 'all', serviceRoles: ['#all'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' });
    }
    expect((await n.api('GET', '/terminators/ert-terminator-2')).status).toBe(404);
    expect(p.inbox.filter((f) => f.type === TT.CreateTunnelTerminatorResponse || f.type === T.Error)).toHaveLength(0);
  });

  it('creates circuits for connections it intercepts, for services its identity may Dial', async () => {
    const ask = () => request(p, TT.CreateCircuitForService, encode(TunnelPb.CreateCircuitForServiceRequest, { serviceName: 'ert-echo', peerData: { 1011: Buffer.from('{"dst_ip":"10.0.0.1"}') } }));
    const refused = await ask();
    expect(refused.type).toBe(T.Error);
    expect(text(refused)).toMatch(/no Dial service policy grants the router's identity 'ert-1' service 'ert-echo'/);
    expect((await n.api('PATCH', `/identities/${identityId}`, { roleAttributes: ['ert-echo-hosts', 'ert-echo-clients'] })).status).toBe(200);
    const seq = p.send(TT.CreateCircuitForService, [], encode(TunnelPb.CreateCircuitForServiceRequest, { serviceName: 'ert-echo', peerData: { 1011: Buffer.from('{"dst_ip":"10.0.0.1"}') } }));
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    // The one terminator is its own: the circuit starts and ends on this router; the intercepted app data rides to the egress.
    expect(route.egress).toMatchObject({ binding: 'tunnel', destination: 'ert-terminator-1' });
    expect(route.egress.peerData['1011'].toString()).toBe('{"dst_ip":"10.0.0.1"}');
    expect(route.egress.peerData['1008'].toString()).toBe('ert-1');
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    const r = await p.replyTo(seq);
    expect(r.type, text(r)).toBe(TT.CreateCircuitForServiceResponse);
    const answer = decode(TunnelPb.CreateCircuitForServiceResponse, r.body);
    expect(answer.circuitId).toBe(route.circuitId);
    interceptCircuit = answer.circuitId;
    expect((route.forwards as { srcAddress: string }[]).map((f) => f.srcAddress)).toContain(answer.address);
    expect(answer.tags).toMatchObject({ serviceId: service, clientId: identityId });
    const dial = await n.api('GET', `/sessions?filter=${encodeURIComponent(`id = "${answer.session.sessionId}"`)}`);
    expect(dial.body.data[0]).toMatchObject({ type: 'Dial', identityId });
  });

  it('updates and removes its terminators, only its own', async () => {
    const update = await request(p, TT.UpdateTunnelTerminator, encode(TunnelPb.UpdateTunnelTerminatorRequest, { terminatorId: 'ert-terminator-1', cost: 9, updateCost: true }));
    expect(update.type, text(update)).toBe(TT.UpdateTunnelTerminatorResponse);
    expect((await n.api('GET', '/terminators/ert-terminator-1')).body.data.cost).toBe(9);
    const other = await request(p, TT.UpdateTunnelTerminator, encode(TunnelPb.UpdateTunnelTerminatorRequest, { terminatorId: 'nope', cost: 1, updateCost: true }));
    expect(text(other)).toMatch(/no terminator 'nope' of this router's tunneler/);
    const made = await request(p, TT.CreateTunnelTerminator, encode(TunnelPb.CreateTunnelTerminatorRequest, { serviceName: 'ert-echo', address: 'ert-terminator-3' }));
    expect(made.type, text(made)).toBe(TT.CreateTunnelTerminatorResponse);
    const removed = await request(p, TT.RemoveTunnelTerminator, Buffer.from('ert-terminator-3'));
    expect(removed.type, text(removed)).toBe(TT.RemoveTunnelTerminatorResponse);
    expect((await n.api('GET', '/terminators/ert-terminator-3')).status).toBe(404);
  });

  it('loses its terminator when its identity loses the Bind grant: the router is told its Bind session is removed', async () => {
    expect(terminatorSession).toBeTruthy();
    const bind = (await n.api('GET', `/service-policies?filter=${encodeURIComponent('name = "ert-echo-bind"')}`)).body.data[0];
    expect((await n.api('DELETE', `/service-policies/${bind.id}`)).status).toBe(200);
    const removed = await p.next((f) => f.type === T.SessionRemoved && (decode(TunnelPb.SessionRemoved, f.body).tokens as string[]).includes(terminatorSession), 10_000);
    expect(decode(TunnelPb.SessionRemoved, removed.body).ids).toContain(terminatorSession);
    await expect.poll(async () => (await n.api('GET', '/terminators/ert-terminator-1')).status, { timeout: 5000 }).toBe(404);
    // Asked again (as the router does after the removal): refused, the policy named.
    const before = logged.length;
    p.send(TT.CreateTunnelTerminator, [], encode(TunnelPb.CreateTunnelTerminatorRequest, { serviceName: 'ert-echo', address: 'ert-terminator-1' }));
    await expect.poll(() => logged.slice(before).some((l) => /no Bind service policy grants the router's identity 'ert-1' service 'ert-echo'/.test(l.reason ?? '')), { timeout: 5000 }).toBe(true);
  });

  it('loses the circuits of connections it intercepted when its identity loses the Dial grant: the router unroutes them', async () => {
    expect(interceptCircuit).toBeTruthy();
    const unrouted = (f: Frame) => f.type === T.Unroute && decode(Schemas.Unroute, f.body).circuitId === interceptCircuit;
    // Still routed: its host's terminator went with the Bind grant, the circuit did not.
    expect(p.inbox.some(unrouted)).toBe(false);
    const dial = (await n.api('GET', `/service-policies?filter=${encodeURIComponent('name = "ert-echo-dial"')}`)).body.data[0];
    expect((await n.api('DELETE', `/service-policies/${dial.id}`)).status).toBe(200);
    const unroute = await p.next(unrouted, 10_000);
    expect(decode(Schemas.Unroute, unroute.body).now).toBe(true);
  });
});

describe('a 2.x router\'s tunneler', () => {
  it('hosts without a session (checked against the policies) and dials with none; refusals name the policy', async () => {
    const { router, identityId } = await tunnelerRouter('ert-2x');
    const service = await hostedService('ert-v2');
    const { p } = await connectRouter2x(ctrlPort, router);
    const host = (address: string, serviceId = service) => request(p, TT.CreateTunnelTerminatorV2, encode(TunnelPb.CreateTunnelTerminatorRequestV2, { serviceId, address, startTime: 99n }));
    let r = await host('ert-v2-terminator');
    expect(r.type).toBe(TT.CreateTunnelTerminatorV2Response);
    expect(decode(TunnelPb.CreateTunnelTerminatorResponseV2, r.body)).toMatchObject({ terminatorId: 'ert-v2-terminator', result: 2, errorCode: 6, msg: expect.stringMatching(/no Bind service policy grants the router's identity 'ert-2x' service 'ert-v2'/) });
    expect((await n.api('PATCH', `/identities/${identityId}`, { roleAttributes: ['ert-v2-hosts', 'ert-v2-clients'] })).status).toBe(200);
    // Its tunneler finds its identity and services in the data model by the router's id (upstream gives the two one id).
    p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { currentIndex: 0, subscriptionDurationSeconds: 300, subscriptionId: 'ert-sub' }));
    const events = decode(RdmSchemas.DataState, (await p.next((f) => f.type === T2.DataState, 10_000)).body).events as Record<string, any>[];
    expect(events.find((e) => e.identity?.id === router.id)?.identity).toMatchObject({ name: 'ert-2x' });
    expect(events.some((e) => e.identity?.id === identityId)).toBe(false);
    const bind = events.find((e) => e.servicePolicy?.name === 'ert-v2-bind')!.servicePolicy;
    const members = events.filter((e) => e.servicePolicyChange?.policyId === bind.id && e.servicePolicyChange.relatedEntityType === 2).flatMap((e) => e.servicePolicyChange.relatedEntityIds);
    expect(members).toContain(router.id);
    r = await host('ert-v2-terminator');
    const ok = decode(TunnelPb.CreateTunnelTerminatorResponseV2, r.body);
    expect(ok).toMatchObject({ terminatorId: 'ert-v2-terminator', startTime: 99n });
    expect(ok.result ?? 0).toBe(0);
    expect((await n.api('GET', '/terminators/ert-v2-terminator')).body.data).toMatchObject({ binding: 'tunnel', routerId: router.id });
    expect(await hostedBy(identityId)).toContain('ert-v2-terminator');
    // An unknown service.
    r = await host('ert-v2-other', 'no-such-service');
    expect(decode(TunnelPb.CreateTunnelTerminatorResponseV2, r.body)).toMatchObject({ result: 2, msg: expect.stringMatching(/no service has the id 'no-such-service'/) });
    // An intercepted connection: CreateTunnelCircuitV2, answered with the circuit.
    const seq = p.send(TT.CreateTunnelCircuitV2, [], encode(TunnelPb.CreateTunnelCircuitV2Request, { serviceName: 'ert-v2' }));
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    expect(route.egress).toMatchObject({ binding: 'tunnel', destination: 'ert-v2-terminator' });
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    const c = await p.replyTo(seq);
    expect(c.type, text(c)).toBe(TT.CreateTunnelCircuitV2Response);
    expect(decode(TunnelPb.CreateTunnelCircuitV2Response, c.body)).toMatchObject({ circuitId: route.circuitId, tags: { clientId: identityId, serviceId: service } });
    p.close();
  });
});

describe('an SDK on ztc\'s own router', () => {
  it('reaches the service a tunneler router hosts, across the link that router dials: the Route it is sent names the tunnel binding', async () => {
    const { router, identityId } = await tunnelerRouter('ert-mesh');
    const service = await hostedService('ert-mesh-svc');
    expect((await n.api('PATCH', `/identities/${identityId}`, { roleAttributes: ['ert-mesh-svc-hosts'] })).status).toBe(200);
    const sdk = await n.identity('ert-mesh-client', ['ert-mesh-svc-clients']);
    const { p } = await connectRouter(ctrlPort, router, { managesLinks: true });
    p.send(T.RouterLinks, []);
    await p.next((f) => f.type === T.PeerStateChanges);
    // Its link to ztc's router (the edge port, ALPN ziti-link; one channel), as upstream's dialer makes it.
    const linkId = `ert-link-${router.id}`;
    const link = await EdgePeer.connect(n.routerPort, { cert: router.cert, key: router.key, alpn: ['ziti-link'] });
    link.send(0, [[0, Buffer.from('ert-conn')], [2, Buffer.from(router.id)], [3, Buffer.from('v1.1.10')], [4, Buffer.from('transport')], [5, le32(1)]], Buffer.from(linkId), -1);
    expect((await link.next((f) => f.type === CT.Result)).headers.get(H.ResultSuccess)).toEqual(Buffer.from([1]));
    p.send(T.RouterLinks, [], encode(Schemas.RouterLinks, { links: [{ id: linkId, destRouterId: n.routerId, linkProtocol: 'tls', dialAddress: `tls:localhost:${n.routerPort}`, iteration: 1 }] }));
    const made = await request(p, TT.CreateTunnelTerminator, encode(TunnelPb.CreateTunnelTerminatorRequest, { serviceName: 'ert-mesh-svc', address: 'ert-mesh-terminator' }));
    expect(made.type, text(made)).toBe(TT.CreateTunnelTerminatorResponse);
    await expect.poll(async () => ((await n.c.call('GET', '/fabric/v1/links', { token: n.admin })).body.data as { id: string }[]).map((l) => l.id), { timeout: 3000 }).toContain(linkId);
    const c = await n.peer(sdk);
    const seq = c.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(await n.session(sdk, service, 'Dial')));
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    expect(route.egress).toMatchObject({ binding: 'tunnel', destination: 'ert-mesh-terminator' });
    expect((route.forwards as { srcAddress: string; dstAddress: string }[]).some((f) => f.srcAddress === linkId || f.dstAddress === linkId)).toBe(true);
    p.send(T.RouteResult, [[1101, le32(route.attempt ?? 0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    const answer = await c.replyTo(seq);
    expect(answer.type, answer.body.toString()).toBe(CT.StateConnected);
    for (const x of [c, link, p]) x.close();
  });
});

describe('a controller restart', () => {
  it('keeps the tunneler\'s terminators: the first dial after the router is back is routed to one, and the router is asked to validate it with the tunnel binding', async () => {
    const { router, identityId } = await tunnelerRouter('ert-restart');
    const service = await hostedService('ert-kept');
    expect((await n.api('PATCH', `/identities/${identityId}`, { roleAttributes: ['ert-kept-hosts'] })).status).toBe(200);
    expect((await n.api('PATCH', `/identities/${client.id}`, { roleAttributes: ['ert-echo-clients', 'ert-v2-clients', 'ert-kept-clients'] })).status).toBe(200);
    const first = await connectRouter(ctrlPort, router);
    const made = await request(first.p, TT.CreateTunnelTerminator, encode(TunnelPb.CreateTunnelTerminatorRequest, { serviceName: 'ert-kept', address: 'ert-kept-1' }));
    expect(made.type, text(made)).toBe(TT.CreateTunnelTerminatorResponse);
    const token = await n.session(client, service, 'Dial');
    first.p.close();
    const db = n.c.running.ctx.config.db;
    await n.c.running.close();
    second = await startController(testConfig(n.c.dataDir, { port: 0, bind: '127.0.0.1', db }));
    const { p } = await connectRouter(second.fabric!.ctrlPort!, router);
    const seq = p.send(T.CreateCircuitV2, [[11, Buffer.from(token)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)]]);
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    expect(route.egress).toMatchObject({ binding: 'tunnel', destination: 'ert-kept-1' });
    p.send(T.RouteResult, [[1101, le32(route.attempt ?? 0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    expect((await p.replyTo(seq)).type).toBe(T.CreateCircuitV2Response);
    const validate = decode(Schemas.ValidateTerminatorsV2Request, (await p.next((f) => f.type === 1041, 5000)).body);
    expect(validate.terminators).toContainEqual(expect.objectContaining({ id: 'ert-kept-1', binding: 'tunnel', address: 'ert-kept-1' }));
    p.close();
  });
});
