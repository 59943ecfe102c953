// Several upstream routers on the control channel (ctrl-channel-1.1.md sections 2.6, 2.7 and 4.2), each a
// test router written from the reference: peers told of each other, links verified and reported, a
// circuit routed across a link (ingress, transit and egress Routes), rerouted when its link fails,
// ended when no path is left, and the Fabric API's view of it all. (By hand: two `ziti router run`
// 1.1.10 linked through ztc carried the C SDK's echo; README, Routers.)
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { DestType, FaultSubject, PeerState, Schemas } from '../../src/fabric/ctrl/messages.js';
import { ADMIN } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, readBytesMap, strings, T, type EnrolledRouter } from '../peers/ctrl-router.js';
import { le32, type EdgePeer, type Frame } from '../peers/edge-sdk.js';

let n: TestNetwork;
let port: number;
const r: Record<'a' | 'b' | 'c', EnrolledRouter> = {} as never;
const p: Record<'a' | 'b' | 'c', EdgePeer> = {} as never;
let host: Member;
let client: Member;
let service: string;

const changes = (f: Frame) => decode(Schemas.PeerStateChanges, f.body).changes as { id: string; state?: number; version?: string; listeners: { address: string }[] }[];
const fabric = async (path: string) => (await n.c.call('GET', `/fabric/v1${path}`, { token: n.admin })).body;
const routeOf = (f: Frame) => decode(Schemas.Route, f.body);
const ok = (circuitId: string, attempt: number, extra: [number, Buffer][] = []): [number, Buffer][] => [[1101, le32(attempt)], [1102, Buffer.from([1])], ...extra];
const report = (from: EdgePeer, id: string, dest: EnrolledRouter, iteration = 1) =>
  from.send(T.RouterLinks, [], encode(Schemas.RouterLinks, { links: [{ id, destRouterId: dest.id, linkProtocol: 'tls', dialAddress: `tls:${dest.name}:14001`, iteration }] }));

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-home-'));
function ztc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.resolve('bin/ztc'), ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: '' }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const events: Record<string, unknown>[] = [];

beforeAll(async () => {
  n = await startNetwork();
  // The data plane's events, as the main thread's hub receives them (the events file and stream read it).
  n.c.running.ctx.events.subscribe((e) => void events.push(e as unknown as Record<string, unknown>));
  port = n.c.running.fabric!.ctrlPort!;
  for (const k of ['a', 'b', 'c'] as const) r[k] = await enrollRouter(n, `links-${k}`);
  service = await n.service('links-echo', { encryptionRequired: true });
  host = await n.identity('links-host', ['links-echo-hosts']);
  client = await n.identity('links-client', ['links-echo-clients']);
}, 60_000);
afterAll(async () => {
  await n.close();
  fs.rmSync(home, { recursive: true, force: true });
});

describe('routers that link', () => {
  it('are told of each other once each is up: the new one of every connected peer, the others of it, with listeners and version', async () => {
    p.a = (await connectRouter(port, r.a, { managesLinks: true, listeners: [{ address: 'tls:links-a:14001', protocol: 'tls', groups: ['default'] }] })).p;
    p.a.send(T.RouterLinks, [], Buffer.alloc(0));
    // ztc's own router first: a peer of every router (test/fabric/links-embedded.test.ts).
    expect(changes(await p.a.next((f) => f.type === T.PeerStateChanges)).map((c) => c.id)).toEqual([n.routerId]);
    p.b = (await connectRouter(port, r.b, { managesLinks: true })).p;
    // Not before b speaks: its side of the channel may not be up yet (it could not verify a's link dial).
    await expect(p.a.next((f) => f.type === T.PeerStateChanges, 400)).rejects.toThrow(/no matching frame/);
    // As a router does on every connect: its dialed links, none yet.
    p.b.send(T.RouterLinks, [], Buffer.alloc(0));
    const toB = changes(await p.b.next((f) => f.type === T.PeerStateChanges));
    expect(toB).toEqual([{ id: r.a.id, version: 'v1.1.10', listeners: [expect.objectContaining({ address: 'tls:links-a:14001', protocol: 'tls', groups: ['default'] })] }, expect.objectContaining({ id: n.routerId })]);
    const toA = changes(await p.a.next((f) => f.type === T.PeerStateChanges));
    expect(toA).toEqual([expect.objectContaining({ id: r.b.id, version: 'v1.1.10', listeners: [] })]);
    // proto3 leaves Healthy (0) out.
    expect(toA[0].state ?? PeerState.Healthy).toBe(PeerState.Healthy);
    const listed = (await fabric(`/routers/${r.a.id}`)).data;
    expect(listed).toMatchObject({ connected: true, listenerAddresses: [{ address: 'tls:links-a:14001', protocol: 'tls' }] });
    // The edge router shows the build its hello named, as upstream's controller does.
    expect((await n.api('GET', `/edge-routers/${r.a.id}`)).body.data).toMatchObject({ version: 'v1.1.10', revision: 'a11e8b4b', os: 'linux', arch: 'amd64', versionInfo: { version: 'v1.1.10', buildDate: '2024-09-04' } });
  });

  it('answer VerifyRouter with a Result: success for the enrolled certificate, failure otherwise', async () => {
    const good = p.a.send(T.VerifyRouter, [], encode(Schemas.VerifyRouter, { routerId: r.b.id, fingerprints: [fp(r.b.cert)] }));
    const yes = await p.a.replyTo(good);
    expect(yes.type).toBe(T.Result);
    expect(yes.headers.get(2)).toEqual(Buffer.from([1]));
    const bad = p.a.send(T.VerifyRouter, [], encode(Schemas.VerifyRouter, { routerId: r.b.id, fingerprints: [fp(r.a.cert)] }));
    const no = await p.a.replyTo(bad);
    expect(no.headers.get(2)).toEqual(Buffer.from([0]));
    expect(no.body.toString()).toMatch(/not its enrolled/);
    const unknown = await p.a.replyTo(p.a.send(T.VerifyRouter, [], encode(Schemas.VerifyRouter, { routerId: 'nobody', fingerprints: ['00'] })));
    expect(unknown.headers.get(2)).toEqual(Buffer.from([0]));
  });

  it('record the links routers report, shown under /fabric/v1/links', async () => {
    report(p.b, 'link-ba', r.a);
    await expect.poll(async () => (await fabric('/links')).data, { timeout: 3000 }).toEqual([
      expect.objectContaining({ id: 'link-ba', protocol: 'tls', dialAddress: 'tls:links-a:14001', iteration: 1, state: 'Connected', sourceRouter: expect.objectContaining({ id: r.b.id, name: 'links-b' }), destRouter: expect.objectContaining({ id: r.a.id, name: 'links-a' }) }),
    ]);
  });

  let terminator: string;
  let circuitId: string;
  let ingress: string;
  let egress: string;
  it('route a dial across the link: the ingress forwards to the link, the egress from it to the host', async () => {
    terminator = 'term-' + Math.random().toString(36).slice(2);
    const bind = await n.session(host, service, 'Bind');
    const made = await p.a.replyTo(p.a.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: terminator, sessionToken: bind, fingerprints: [fp(host.cert)], peerData: { 1003: Buffer.alloc(32, 5) } })));
    expect(decode(Schemas.CreateTerminatorV2Response, made.body).result ?? 0).toBe(0);

    const dial = await n.session(client, service, 'Dial');
    const seq = p.b.send(T.CreateCircuitV2, [[11, Buffer.from(dial)], [12, strings([fp(client.cert)])], [10, bytesMap([[1003, Buffer.alloc(32, 6)]])]]);
    const atB = routeOf(await p.b.next((f) => f.type === T.Route));
    const atA = routeOf(await p.a.next((f) => f.type === T.Route));
    circuitId = atB.circuitId;
    expect(atA.circuitId).toBe(circuitId);
    expect(atB.egress).toBeUndefined();
    ingress = atB.forwards[0].srcAddress;
    egress = atA.egress.address;
    // proto3 leaves Start (0) out of the second forward.
    expect(atB.forwards).toEqual([
      { srcAddress: ingress, dstAddress: 'link-ba', dstType: DestType.Link },
      { srcAddress: 'link-ba', dstAddress: ingress },
    ]);
    expect(atA.forwards).toEqual([
      { srcAddress: egress, dstAddress: 'link-ba', dstType: DestType.Link },
      { srcAddress: 'link-ba', dstAddress: egress, dstType: DestType.End },
    ]);
    expect(atA.egress).toMatchObject({ binding: 'edge', destination: terminator });
    // No answer to the ingress until every router of the path has built its part.
    p.b.send(T.RouteResult, ok(circuitId, 0), Buffer.from(circuitId));
    await expect(p.b.replyTo(seq, 400)).rejects.toThrow(/no matching frame/);
    p.a.send(T.RouteResult, ok(circuitId, 0, [[1500, Buffer.from('from-host')]]), Buffer.from(circuitId));
    const answer = await p.b.replyTo(seq);
    expect(answer.type).toBe(T.CreateCircuitV2Response);
    expect(answer.headers.get(11)!.toString()).toBe(circuitId);
    expect(answer.headers.get(12)!.toString()).toBe(ingress);
    const peerData = readBytesMap(answer.headers.get(10)!);
    expect(peerData.get(1003)).toEqual(Buffer.alloc(32, 5));
    expect(peerData.get(1500)?.toString()).toBe('from-host');
    await expect.poll(async () => (await fabric(`/circuits/${circuitId}`)).data, { timeout: 3000 }).toMatchObject({
      clientId: client.id,
      service: { id: service },
      terminator: { id: terminator },
      path: { nodes: [{ id: r.b.id, name: 'links-b' }, { id: r.a.id, name: 'links-a' }], links: [{ id: 'link-ba' }] },
    });
  });

  it('move a circuit to another path when its link fails: through a transit router, egress left as it is', async () => {
    p.c = (await connectRouter(port, r.c, { managesLinks: true })).p;
    p.c.send(T.RouterLinks, [], Buffer.alloc(0));
    // a and b hear of c.
    for (const k of ['a', 'b'] as const) expect(changes(await p[k].next((f) => f.type === T.PeerStateChanges && changes(f)[0].id === r.c.id))[0].id).toBe(r.c.id);
    report(p.c, 'link-cb', r.b);
    report(p.c, 'link-ca', r.a);
    await expect.poll(async () => (await fabric('/links')).meta.pagination.totalCount, { timeout: 3000 }).toBe(3);
    p.b.send(T.Fault, [], encode(Schemas.Fault, { subject: FaultSubject.LinkFault, id: 'link-ba', iteration: 1 }));
    const atB = routeOf(await p.b.next((f) => f.type === T.Route));
    const atC = routeOf(await p.c.next((f) => f.type === T.Route));
    const atA = routeOf(await p.a.next((f) => f.type === T.Route));
    for (const x of [atA, atB, atC]) expect(x).toMatchObject({ circuitId, attempt: 99969996 });
    expect(atB.forwards[0]).toEqual({ srcAddress: ingress, dstAddress: 'link-cb', dstType: DestType.Link });
    expect(atC.forwards).toEqual([
      { srcAddress: 'link-cb', dstAddress: 'link-ca', dstType: DestType.Link },
      { srcAddress: 'link-ca', dstAddress: 'link-cb', dstType: DestType.Link },
    ]);
    expect(atA.egress).toBeUndefined();
    expect(atA.forwards[1]).toEqual({ srcAddress: 'link-ca', dstAddress: egress, dstType: DestType.End });
    for (const k of ['a', 'b', 'c'] as const) p[k].send(T.RouteResult, ok(circuitId, 99969996), Buffer.from(circuitId));
    await expect.poll(async () => (await fabric(`/circuits/${circuitId}`)).data.path.links.map((l: { id: string }) => l.id), { timeout: 3000 }).toEqual(['link-cb', 'link-ca']);
    expect((await fabric('/links')).data.map((l: { id: string }) => l.id).sort()).toEqual(['link-ca', 'link-cb']);
  });

  it('shows the same through the built CLI: ztc fabric links|circuits|routers, as a table and as JSON', async () => {
    expect((await ztc('login', n.c.running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes')).code).toBe(0);
    const links = await ztc('fabric', 'links');
    expect(links.code, links.stderr).toBe(0);
    expect(links.stdout).toMatch(/link-cb\s+links-c\s+links-b\s+tls/);
    const circuits = JSON.parse((await ztc('fabric', 'circuits', '-o', 'json')).stdout);
    expect(circuits.map((c: { id: string; path: { nodes: { name: string }[] } }) => [c.id, c.path.nodes.map((x) => x.name)])).toEqual([[circuitId, ['links-b', 'links-c', 'links-a']]]);
    const routers = await ztc('fabric', 'routers', 'name contains "links-"');
    expect(routers.stdout).toMatch(/links-a\s+true/);
  });

  it('end a circuit when its transit router goes and no path is left; its peers hear it is unhealthy', async () => {
    p.c.close();
    for (const k of ['a', 'b'] as const) {
      const down = changes(await p[k].next((f) => f.type === T.PeerStateChanges && changes(f)[0].id === r.c.id));
      expect(down).toEqual([{ id: r.c.id, state: PeerState.Unhealthy, listeners: [] }]);
      expect(decode(Schemas.Unroute, (await p[k].next((f) => f.type === T.Unroute)).body)).toMatchObject({ circuitId, now: true });
    }
    await expect.poll(async () => (await fabric('/circuits')).data, { timeout: 3000 }).toEqual([]);
    // The links c dialed went with it.
    expect((await fabric('/links')).data).toEqual([]);
    expect((await fabric(`/routers/${r.c.id}`)).data.connected).toBe(false);
  });

  it('refuse a dial when the service\'s terminators are on routers the ingress cannot reach', async () => {
    const dial = await n.session(client, service, 'Dial');
    const err = await p.b.replyTo(p.b.send(T.CreateCircuitV2, [[11, Buffer.from(dial)], [12, strings([fp(client.cert)])], [10, bytesMap([[1003, Buffer.alloc(32, 6)]])]]));
    expect(err.type).toBe(T.Error);
    expect(err.body.toString()).toMatch(/none on a router reachable from router 'links-b'/);
  });

  it('retry a route that failed on one router, after unrouting what the others built', async () => {
    report(p.b, 'link-ba-2', r.a, 2);
    await expect.poll(async () => (await fabric('/links')).data.length, { timeout: 3000 }).toBe(1);
    const dial = await n.session(client, service, 'Dial');
    const seq = p.b.send(T.CreateCircuitV2, [[11, Buffer.from(dial)], [12, strings([fp(client.cert)])], [10, bytesMap([[1003, Buffer.alloc(32, 6)]])]]);
    const first = routeOf(await p.a.next((f) => f.type === T.Route));
    await p.b.next((f) => f.type === T.Route);
    p.b.send(T.RouteResult, ok(first.circuitId, 0), Buffer.from(first.circuitId));
    p.a.send(T.RouteResult, [[1101, le32(0)], [1103, Buffer.from('the host did not answer')], [1104, Buffer.from([3])]], Buffer.from(first.circuitId));
    expect(decode(Schemas.Unroute, (await p.b.next((f) => f.type === T.Unroute)).body).circuitId).toBe(first.circuitId);
    const again = routeOf(await p.a.next((f) => f.type === T.Route));
    expect(again.attempt).toBe(1);
    await p.b.next((f) => f.type === T.Route);
    for (const k of ['a', 'b'] as const) p[k].send(T.RouteResult, ok(again.circuitId, 1), Buffer.from(again.circuitId));
    expect((await p.b.replyTo(seq)).type).toBe(T.CreateCircuitV2Response);
  });

  it('tells it all as events, named as upstream names them: routers, links, terminators, circuits created, moved and ended', async () => {
    const of = (ns: string, type: string) => events.filter((e) => e.namespace === ns && e.event_type === type);
    expect(of('fabric.routers', 'router-online').map((e) => e.router_id)).toEqual(expect.arrayContaining([r.a.id, r.b.id, r.c.id]));
    expect(of('fabric.routers', 'router-offline').map((e) => e.router_id)).toContain(r.c.id);
    expect(of('fabric.links', 'connected')).toEqual(expect.arrayContaining([expect.objectContaining({ link_id: 'link-ba', src_router_id: r.b.id, dst_router_id: r.a.id, protocol: 'tls' })]));
    expect(of('fabric.links', 'fault').map((e) => e.link_id)).toContain('link-ba');
    expect(of('fabric.links', 'removed').map((e) => e.link_id).sort()).toEqual(['link-ca', 'link-cb']);
    expect(of('fabric.terminators', 'created')).toEqual(expect.arrayContaining([expect.objectContaining({ terminator_id: terminator, router_id: r.a.id, host_id: host.id, service_id: service })]));
    const created = of('fabric.circuits', 'created').find((e) => e.circuit_id === circuitId)!;
    expect(created).toMatchObject({ client_id: client.id, service_id: service, terminator_id: terminator, path: { nodes: [r.b.id, r.a.id], links: ['link-ba'] }, link_count: 1 });
    expect(created.creation_timespan).toBeGreaterThan(0);
    expect(of('fabric.circuits', 'pathUpdated').find((e) => e.circuit_id === circuitId)).toMatchObject({ path: { nodes: [r.b.id, r.c.id, r.a.id], links: ['link-cb', 'link-ca'] } });
    expect(of('fabric.circuits', 'deleted').map((e) => e.circuit_id)).toContain(circuitId);
    // No token or key of any kind rides on them.
    expect(JSON.stringify(events)).not.toMatch(new RegExp([host.token, client.token].join('|')));
  });

  it('cost links by the latency their routers measure (metrics: link.<id>.latency + queue_time means, ns)', async () => {
    const histogram = (mean: number) => encode(Schemas.Histogram, { count: 10n, mean });
    const metrics = (from: 'a' | 'b', latencyNs: number) =>
      p[from].send(1007, [], encode(Schemas.Metrics, { sourceId: r[from].id, histograms: { 'link.link-ba-2.latency': histogram(latencyNs), 'link.link-ba-2.queue_time': histogram(1_000_000), 'link.other.latency': histogram(9e9) } }));
    metrics('b', 4_000_000);
    metrics('a', 2_500_000);
    await expect.poll(async () => (await fabric('/links/link-ba-2')).data, { timeout: 3000 }).toMatchObject({ sourceLatency: 5_000_000, destLatency: 3_500_000, staticCost: 1, cost: 1 + 5 + 3 });
  });

  it('keep a router that reconnects while its last close is still being cleaned up: healthy to its peers, connected', async () => {
    const REROUTE = 99969996;
    const upAt = (k: 'a' | 'b', ms?: number) => p[k].next((f) => f.type === T.PeerStateChanges && changes(f)[0].id === r.c.id, ms);
    p.c = (await connectRouter(port, r.c, { managesLinks: true })).p;
    p.c.send(T.RouterLinks, [], Buffer.alloc(0));
    for (const k of ['a', 'b'] as const) expect(changes(await upAt(k))[0].state ?? PeerState.Healthy).toBe(PeerState.Healthy);
    // The circuit moves through c: b's own link to a fails.
    report(p.c, 'link-cb-2', r.b, 2);
    report(p.c, 'link-ca-2', r.a, 2);
    await expect.poll(async () => (await fabric('/links')).meta.pagination.totalCount, { timeout: 3000 }).toBe(3);
    p.b.send(T.Fault, [], encode(Schemas.Fault, { subject: FaultSubject.LinkFault, id: 'link-ba-2', iteration: 2 }));
    const moved = routeOf(await p.c.next((f) => f.type === T.Route)).circuitId;
    for (const k of ['a', 'b', 'c'] as const) p[k].send(T.RouteResult, ok(moved, REROUTE), Buffer.from(moved));
    await expect.poll(async () => (await fabric(`/circuits/${moved}`)).data.path.links.map((l: { id: string }) => l.id), { timeout: 3000 }).toEqual(['link-cb-2', 'link-ca-2']);
    report(p.b, 'link-ba-3', r.a, 3);
    await expect.poll(async () => (await fabric('/links')).meta.pagination.totalCount, { timeout: 3000 }).toBe(3);
    // c goes: its close is cleaned up by moving the circuit back to b -> a, which waits for a's and b's RouteResults...
    p.c.close();
    await p.a.next((f) => f.type === T.Route && routeOf(f).circuitId === moved);
    await p.b.next((f) => f.type === T.Route && routeOf(f).circuitId === moved);
    // ... and meanwhile c is back, announced healthy to both.
    p.c = (await connectRouter(port, r.c, { managesLinks: true })).p;
    p.c.send(T.RouterLinks, [], Buffer.alloc(0));
    for (const k of ['a', 'b'] as const) expect(changes(await upAt(k))[0].state ?? PeerState.Healthy).toBe(PeerState.Healthy);
    for (const k of ['a', 'b'] as const) p[k].send(T.RouteResult, ok(moved, REROUTE), Buffer.from(moved));
    await expect.poll(async () => (await fabric(`/circuits/${moved}`)).data.path.links.map((l: { id: string }) => l.id), { timeout: 3000 }).toEqual(['link-ba-3']);
    // The old connection's cleanup ends without telling anyone c is down, and c's lease stands.
    for (const k of ['a', 'b'] as const) await expect(upAt(k, 1500), `${k} heard c is down`).rejects.toThrow(/no matching frame/);
    expect((await fabric(`/routers/${r.c.id}`)).data.connected).toBe(true);
  });
});
