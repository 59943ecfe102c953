// ztc's own router as a router of the mesh (issue 43 item 1): an upstream router (a test router written
// from ctrl-channel-1.1.md 2.6/2.7 and upstream's xgress wire format) is told of it as a peer, dials its
// link to the router's edge port (ALPN ziti-link, split into payload and ack channels as upstream's
// default dialer does), and circuits cross that link both ways: an SDK on ztc's router reaching a host
// behind the upstream router, and the upstream router's client reaching a host on ztc's router. The test
// router speaks the xgress payloads itself: start, data, acks, end.
import { randomUUID } from 'node:crypto';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { DestType, Schemas } from '../../src/fabric/ctrl/messages.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, readBytesMap, strings, T, type EnrolledRouter } from '../peers/ctrl-router.js';
import { CT, EdgePeer, H, le32, one, type Frame } from '../peers/edge-sdk.js';

// Upstream's xgress wire format (router/xgress/messages.go at v1.1.10), written here from the reference.
const X = { Payload: 1100, Ack: 1101, CircuitId: 2256, Sequence: 2257, Flags: 2258, RecvBuffer: 2259, RTT: 2260, EdgeFlags: 2016, Uuid: 2000 };
const F = { End: 1, Originator: 2, Start: 4, Retransmit: 16 };
const LINK = { ConnId: 0, Type: 1, RouterId: 2, Version: 3, Binding: 4, Iteration: 5 };
const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeUInt32LE(n);
  return b;
};
const flagsOf = (f: Frame) => f.headers.get(X.Flags)?.readUInt32LE(0) ?? 0;
const seqOf = (f: Frame) => f.headers.get(X.Sequence)!.readInt32LE(0);
const circuitOf = (f: Frame) => f.headers.get(X.CircuitId)?.toString();
/** A payload sent for the first time (not a resend: those come whenever an ack is late, as on a loaded machine). */
const fresh = (circuitId?: string) => (f: Frame) => f.type === X.Payload && !(flagsOf(f) & F.Retransmit) && (!circuitId || circuitOf(f) === circuitId);
function payload(circuitId: string, seq: number, flags: number, data = Buffer.alloc(0)): [number, [number, Buffer][], Buffer] {
  return [X.Payload, [[X.CircuitId, Buffer.from(circuitId)], [X.Sequence, u64(seq)], [X.Flags, le32(flags)], [X.RecvBuffer, le32(0)], [X.RTT, Buffer.from([1, 2])]], data];
}

let n: TestNetwork;
let ctrlPort: number;
let r: EnrolledRouter;
let ctrl: EdgePeer;
let linkPayload: EdgePeer;
let linkAck: EdgePeer;
const linkId = 'link-' + randomUUID();
let service: string;
let host: Member;
let client: Member;

/** The test router's side of a link channel: TLS with its certificate and ALPN ziti-link, then the link hello. */
async function dialLink(to: EnrolledRouter, type: number, connId: string, o: { id?: string; cert?: string; key?: string; link?: string } = {}) {
  const p = await EdgePeer.connect(n.routerPort, { cert: o.cert ?? to.cert, key: o.key ?? to.key, alpn: ['ziti-link'] });
  const headers: [number, Buffer][] = [[LINK.ConnId, Buffer.from(connId)], [LINK.RouterId, Buffer.from(o.id ?? to.id)], [LINK.Version, Buffer.from('v1.1.10')], [LINK.Binding, Buffer.from('transport')], [LINK.Iteration, le32(1)]];
  if (type) headers.push([LINK.Type, Buffer.from([type])]);
  p.send(0, headers, Buffer.from(o.link ?? linkId), -1);
  const result = await p.next((f) => f.type === CT.Result, 3000);
  return { p, result };
}

beforeAll(async () => {
  n = await startNetwork();
  ctrlPort = n.c.running.fabric!.ctrlPort!;
  r = await enrollRouter(n, 'mesh-upstream');
  service = await n.service('mesh-echo', { encryptionRequired: true });
  host = await n.identity('mesh-host', ['mesh-echo-hosts']);
  client = await n.identity('mesh-client', ['mesh-echo-clients']);
}, 60_000);
afterAll(async () => {
  for (const p of [ctrl, linkPayload, linkAck]) p?.close();
  await n.close();
});

describe("ztc's router in the mesh", () => {
  it('is named to an upstream router as a peer to link with: its id, a version and its edge port as link listener', async () => {
    ctrl = (await connectRouter(ctrlPort, r, { managesLinks: true })).p;
    ctrl.send(T.RouterLinks, [], Buffer.alloc(0));
    const told = decode(Schemas.PeerStateChanges, (await ctrl.next((f) => f.type === T.PeerStateChanges)).body).changes as { id: string; version: string; listeners: { address: string; protocol: string; groups: string[] }[] }[];
    expect(told).toEqual([{ id: n.routerId, version: expect.stringMatching(/^v\d/), listeners: [expect.objectContaining({ address: `tls:localhost:${n.routerPort}`, protocol: 'tls', groups: ['default'] })] }]);
  });

  it('refuses a link from a router that is not who it says (certificate of another router, unknown id)', async () => {
    const other = await enrollRouter(n, 'mesh-other');
    const wrong = await dialLink(r, 0, 'x', { cert: other.cert, key: other.key });
    expect(wrong.result.headers.get(H.ResultSuccess)).toEqual(Buffer.from([0]));
    expect(wrong.result.body.toString()).toMatch(/not its enrolled one/);
    await wrong.p.whenClosed(2000);
    const unknown = await dialLink(r, 0, 'y', { id: 'nobody' });
    expect(unknown.result.body.toString()).toMatch(/no enrolled router nobody/);
    // A hello with no router id at all.
    const p = await EdgePeer.connect(n.routerPort, { cert: r.cert, key: r.key, alpn: ['ziti-link'] });
    p.send(0, [], Buffer.from('l'), -1);
    expect((await p.next((f) => f.type === CT.Result)).body.toString()).toMatch(/must name the link/);
    await p.whenClosed(2000);
  });

  it('takes the link split into payload and ack channels, as upstream dials it, and answers heartbeats and latency probes', async () => {
    const connId = randomUUID();
    const a = await dialLink(r, 1, connId);
    expect(a.result.headers.get(H.ResultSuccess)).toEqual(one);
    expect(a.result.headers.get(H.ReplyFor)!.readInt32LE(0)).toBe(-1);
    expect(a.result.headers.get(H.Id)!.toString()).toBe(n.routerId);
    const b = await dialLink(r, 2, connId);
    expect(b.result.headers.get(H.ResultSuccess)).toEqual(one);
    linkPayload = a.p;
    linkAck = b.p;
    // The dialer reports it, as upstream's routers do with capability bit 2 (only the dialer).
    ctrl.send(T.RouterLinks, [], encode(Schemas.RouterLinks, { links: [{ id: linkId, destRouterId: n.routerId, linkProtocol: 'tls', dialAddress: `tls:localhost:${n.routerPort}`, iteration: 1 }] }));
    await expect.poll(async () => ((await n.c.call('GET', '/fabric/v1/links', { token: n.admin })).body.data as { id: string }[]).map((l) => l.id), { timeout: 3000 }).toEqual([linkId]);
    // Heartbeat (header 5) echoed in header 6; a latency probe answered with a Result.
    linkPayload.send(5, [[5, u64(12345)]]);
    expect((await linkPayload.next((f) => f.headers.has(6))).headers.get(6)).toEqual(u64(12345));
    const probe = linkAck.send(3, [[128, u64(1)]]);
    expect((await linkAck.replyTo(probe)).type).toBe(CT.Result);
  });

  it('carries an SDK dial on its router to a host behind the upstream router: Route there, CircuitStart, data both ways, acks, end', async () => {
    // The host bound at the upstream router.
    const terminator = 'term-' + randomUUID();
    const bind = await n.session(host, service, 'Bind');
    const made = await ctrl.replyTo(ctrl.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: terminator, sessionToken: bind, fingerprints: [fp(host.cert)], peerData: { 1003: Buffer.alloc(32, 5) } })));
    expect(decode(Schemas.CreateTerminatorV2Response, made.body).result ?? 0).toBe(0);

    const sdk = await n.peer(client);
    const dial = await n.session(client, service, 'Dial');
    const connect = sdk.send(CT.Connect, [[H.ConnId, le32(9)], [H.Seq, le32(0)], [H.PublicKey, Buffer.alloc(32, 9)]], Buffer.from(dial));
    const route = decode(Schemas.Route, (await ctrl.next((f) => f.type === T.Route)).body);
    const egress = route.egress.address;
    expect(route.egress).toMatchObject({ binding: 'edge', destination: terminator });
    expect(route.forwards).toEqual([
      { srcAddress: egress, dstAddress: linkId, dstType: DestType.Link },
      { srcAddress: linkId, dstAddress: egress, dstType: DestType.End },
    ]);
    ctrl.send(T.RouteResult, [[1101, le32(route.attempt ?? 0)], [1102, one]], Buffer.from(route.circuitId));
    const connected = await sdk.replyTo(connect);
    expect(connected.type, connected.body.toString()).toBe(CT.StateConnected);
    expect(connected.headers.get(H.PublicKey)).toEqual(Buffer.alloc(32, 5));
    const circuitId = route.circuitId as string;
    expect(connected.headers.get(H.CircuitId)!.toString()).toBe(circuitId);

    // CircuitStart first (sequence 0, from the initiator), then the SDK's data.
    const start = await linkPayload.next(fresh());
    expect([circuitOf(start), seqOf(start), flagsOf(start)]).toEqual([circuitId, 0, F.Start]);
    sdk.send(CT.Data, [[H.ConnId, le32(9)], [H.Seq, le32(1)], [H.Uuid, Buffer.alloc(16, 1)]], Buffer.from('ping'));
    const data = await linkPayload.next(fresh());
    expect([seqOf(data), flagsOf(data), data.body.toString()]).toEqual([1, 0, 'ping']);
    expect(data.headers.get(X.Uuid)).toEqual(Buffer.alloc(16, 1));

    // The host's answer (from the terminator's end: originator flag), with a FIN flag for its edge side.
    linkPayload.send(...payload(circuitId, 0, F.Originator, Buffer.from('pong')));
    const back = await sdk.next((f) => f.type === CT.Data);
    expect(back.body.toString()).toBe('pong');
    expect(back.headers.get(H.ConnId)).toEqual(le32(9));
    // Acknowledged on the ack channel: sequence 0, from the initiator's end, nothing buffered.
    const ack = await linkAck.next((f) => f.type === X.Ack);
    expect([circuitOf(ack), ack.body.readInt32BE(0), flagsOf(ack), ack.headers.get(X.RecvBuffer)!.readUInt32LE(0)]).toEqual([circuitId, 0, 0, 0]);
    expect(ack.headers.get(X.RTT)).toEqual(Buffer.from([1, 2]));
    // A resend of the same payload is acknowledged again and not delivered twice.
    linkPayload.send(...payload(circuitId, 0, F.Originator, Buffer.from('pong')));
    expect((await linkAck.next((f) => f.type === X.Ack)).body.readInt32BE(0)).toBe(0);
    // Out of order: 2 waits for 1.
    linkPayload.send(...payload(circuitId, 2, F.Originator, Buffer.from('-second')));
    linkPayload.send(...payload(circuitId, 1, F.Originator, Buffer.from('first')));
    const one1 = await sdk.next((f) => f.type === CT.Data);
    const two = await sdk.next((f) => f.type === CT.Data);
    expect(one1.body.toString() + two.body.toString()).toBe('first-second');

    // The far end ends the circuit: the SDK hears it.
    linkPayload.send(...payload(circuitId, 3, F.Originator | F.End));
    const closed = await sdk.next((f) => f.type === CT.StateClosed);
    expect(closed.headers.get(H.ConnId)).toEqual(le32(9));
    // And the controller unroutes the circuit at the upstream router.
    expect(decode(Schemas.Unroute, (await ctrl.next((f) => f.type === T.Unroute)).body)).toMatchObject({ circuitId });
    sdk.close();
  });

  it("routes the upstream router's dial to a host on ztc's router: ingress there, egress here, the host dialed, bytes both ways", async () => {
    const hostPeer = await n.peer(host);
    const bind = await n.session(host, service, 'Bind');
    const bound = await hostPeer.replyTo(hostPeer.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.PublicKey, Buffer.alloc(32, 7)]], Buffer.from(bind)));
    expect(bound.type).toBe(CT.StateConnected);
    // Only the host on ztc's router: drop the one the previous test left at the upstream router.
    const terminators = (await n.api('GET', `/terminators?filter=${encodeURIComponent(`service = "${service}"`)}`)).body.data as { id: string; routerId: string }[];
    for (const t of terminators.filter((t) => t.routerId === r.id)) ctrl.send(T.RemoveTerminators, [], encode(Schemas.RemoveTerminatorsRequest, { terminatorIds: [t.id] }));
    await expect.poll(async () => ((await n.api('GET', `/terminators?filter=${encodeURIComponent(`service = "${service}"`)}`)).body.data as { routerId: string }[]).map((t) => t.routerId), { timeout: 3000 }).toEqual([n.routerId]);

    const dial = await n.session(client, service, 'Dial');
    const ask = ctrl.send(T.CreateCircuitV2, [[11, Buffer.from(dial)], [12, strings([fp(client.cert)])], [10, bytesMap([[1003, Buffer.alloc(32, 6)]])]]);
    const route = decode(Schemas.Route, (await ctrl.next((f) => f.type === T.Route)).body);
    const ingress = route.forwards[0].srcAddress as string;
    expect(route.egress).toBeUndefined();
    expect(route.forwards).toEqual([
      { srcAddress: ingress, dstAddress: linkId, dstType: DestType.Link },
      { srcAddress: linkId, dstAddress: ingress },
    ]);
    // ztc's router dials its host (the caller named is the session's identity).
    const hostDial = await hostPeer.next((f) => f.type === CT.Dial);
    expect(hostDial.headers.get(H.CallerId)!.toString()).toBe('mesh-client');
    expect(hostDial.headers.get(H.PublicKey)).toEqual(Buffer.alloc(32, 6));
    hostPeer.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.ReplyFor, Buffer.from(new Int32Array([hostDial.seq]).buffer)]], le32(44));
    await hostPeer.next((f) => f.type === CT.StateConnected);
    ctrl.send(T.RouteResult, [[1101, le32(route.attempt ?? 0)], [1102, one]], Buffer.from(route.circuitId));
    const answer = await ctrl.replyTo(ask);
    expect(answer.type).toBe(T.CreateCircuitV2Response);
    const circuitId = answer.headers.get(11)!.toString();
    expect(readBytesMap(answer.headers.get(10)!).get(1003)).toEqual(Buffer.alloc(32, 7));

    // The host's crypto header waits for CircuitStart (the ingress may not be routed before it).
    hostPeer.send(CT.Data, [[H.ConnId, le32(44)], [H.Seq, le32(1)]], Buffer.from('header'));
    await expect(linkPayload.next(fresh(circuitId), 300)).rejects.toThrow(/no matching frame/);
    linkPayload.send(...payload(circuitId, 0, F.Start));
    const first = await linkPayload.next(fresh(circuitId));
    expect([seqOf(first), flagsOf(first), first.body.toString()]).toEqual([0, F.Originator, 'header']);
    linkPayload.send(...payload(circuitId, 1, 0, Buffer.from('hello host')));
    const atHost = await hostPeer.next((f) => f.type === CT.Data);
    expect([atHost.headers.get(H.ConnId)!.readUInt32LE(0), atHost.body.toString()]).toEqual([44, 'hello host']);
    // Acks for the start and the data, from the terminator's end.
    const acks = [await linkAck.next((f) => f.type === X.Ack && circuitOf(f) === circuitId), await linkAck.next((f) => f.type === X.Ack && circuitOf(f) === circuitId)];
    expect(acks.map((a) => [a.body.readInt32BE(0), flagsOf(a)])).toEqual([[0, F.Originator], [1, F.Originator]]);

    // The host closes: CircuitEnd goes out after its data, and the circuit is unrouted at the upstream router.
    hostPeer.send(CT.StateClosed, [[H.ConnId, le32(44)], [H.Seq, le32(2)]], Buffer.from('bye'));
    const end = await linkPayload.next(fresh(circuitId));
    expect([seqOf(end), flagsOf(end)]).toEqual([1, F.Originator | F.End]);
    // Unacknowledged, it is sent again (a receiver whose buffer is full drops; upstream resends too).
    const again = await linkPayload.next((f) => f.type === X.Payload && circuitOf(f) === circuitId && !!(flagsOf(f) & F.Retransmit));
    expect([0, 1]).toContain(seqOf(again));
    // The circuit stays routed until what ztc's router sent is acknowledged, then it is unrouted.
    await expect(ctrl.next((f) => f.type === T.Unroute, 300)).rejects.toThrow(/no matching frame/);
    linkAck.send(X.Ack, [[X.CircuitId, Buffer.from(circuitId)], [X.RecvBuffer, le32(0)], [X.RTT, Buffer.from([0, 0])]], Buffer.from([0, 0, 0, 0, 0, 0, 0, 1]));
    expect(decode(Schemas.Unroute, (await ctrl.next((f) => f.type === T.Unroute)).body)).toMatchObject({ circuitId });
    hostPeer.close();
  });

  it('dials a link itself to a router that announced a listener and did not dial: split channels, its own certificate, reported to the network', async () => {
    const listening = await enrollRouter(n, 'mesh-listener');
    // The test router's link listener: TLS with its enrolled server certificate, asking for a client certificate.
    const hellos: { frame: Frame; peer: EdgePeer; alpn: string | false; presented: string }[] = [];
    const server = tls.createServer({ cert: listening.serverCert, key: listening.serverKey, requestCert: true, rejectUnauthorized: false, ALPNProtocols: ['ziti-link'] }, (socket) => {
      const peer = new EdgePeer(socket);
      void peer.next((f) => f.type === 0, 10_000).then((frame) => {
        hellos.push({ frame, peer, alpn: socket.alpnProtocol, presented: socket.getPeerCertificate().raw.toString('base64') });
        peer.send(CT.Result, [[H.ResultSuccess, one], [H.ReplyFor, Buffer.from(new Int32Array([-1]).buffer)], [H.Id, Buffer.from(listening.id)]], Buffer.alloc(0), -1);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const p = (await connectRouter(ctrlPort, listening, { managesLinks: true, listeners: [{ address: `tls:localhost:${port}`, protocol: 'tls', groups: ['default'] }] })).p;
    p.send(T.RouterLinks, [], Buffer.alloc(0));
    try {
      // After its grace (3 s) for the router to dial first: the payload channel, then the ack channel.
      await expect.poll(() => hellos.length, { timeout: 8000, interval: 100 }).toBe(2);
      const [a, b] = hellos;
      expect(a.alpn).toBe('ziti-link');
      expect(a.frame.seq).toBe(-1);
      expect([a.frame.headers.get(LINK.Type)![0], b.frame.headers.get(LINK.Type)![0]]).toEqual([1, 2]);
      expect(a.frame.headers.get(LINK.RouterId)!.toString()).toBe(n.routerId);
      expect(a.frame.headers.get(LINK.ConnId)).toEqual(b.frame.headers.get(LINK.ConnId));
      expect(a.frame.headers.get(LINK.Iteration)!.readUInt32LE(0)).toBe(1);
      const linkId2 = a.frame.body.toString();
      expect(b.frame.body.toString()).toBe(linkId2);
      // The certificate it presented is the embedded router's: VerifyRouter (what the listening router asks) says so.
      const pem = `-----BEGIN CERTIFICATE-----\n${a.presented}\n-----END CERTIFICATE-----\n`;
      const verdict = await p.replyTo(p.send(T.VerifyRouter, [], encode(Schemas.VerifyRouter, { routerId: n.routerId, fingerprints: [fp(pem)] })));
      expect(verdict.headers.get(H.ResultSuccess)).toEqual(one);
      await expect.poll(async () => ((await n.c.call('GET', '/fabric/v1/links', { token: n.admin })).body.data as { id: string; sourceRouter: { id: string }; destRouter: { id: string } }[]).find((l) => l.id === linkId2), { timeout: 3000 }).toMatchObject({ sourceRouter: { id: n.routerId }, destRouter: { id: listening.id } });
    } finally {
      for (const h of hellos) h.peer.close();
      p.close();
      server.close();
    }
  });

  it('moves its circuits off a link that closes: the link is gone from the network, its SDK dials fail with a reason', async () => {
    linkPayload.close();
    await linkAck.whenClosed(3000);
    const sdk = await n.peer(client);
    // Bind again at the upstream router only: ztc's router can no longer reach it.
    const bind = await n.session(host, service, 'Bind');
    await ctrl.replyTo(ctrl.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'term-2', sessionToken: bind, fingerprints: [fp(host.cert)], peerData: { 1003: Buffer.alloc(32, 5) } })));
    const dial = await n.session(client, service, 'Dial');
    const refused = await sdk.replyTo(sdk.send(CT.Connect, [[H.ConnId, le32(3)], [H.Seq, le32(0)], [H.PublicKey, Buffer.alloc(32, 9)]], Buffer.from(dial)));
    expect(refused.type).toBe(CT.StateClosed);
    expect(refused.body.toString()).toMatch(/none on a router reachable from router/);
    sdk.close();
  });

  it('carries a circuit across itself between two upstream routers that are not linked to each other (transit)', async () => {
    const ends = await Promise.all(['mesh-t1', 'mesh-t2'].map(async (name) => {
      const router = await enrollRouter(n, name);
      const c = (await connectRouter(ctrlPort, router, { managesLinks: true })).p;
      c.send(T.RouterLinks, [], Buffer.alloc(0));
      const id = `link-${name}-${randomUUID().slice(0, 8)}`;
      const connId = randomUUID();
      const payloadCh = (await dialLink(router, 1, connId, { link: id })).p;
      const ackCh = (await dialLink(router, 2, connId, { link: id })).p;
      c.send(T.RouterLinks, [], encode(Schemas.RouterLinks, { links: [{ id, destRouterId: n.routerId, linkProtocol: 'tls', dialAddress: `tls:localhost:${n.routerPort}`, iteration: 1 }] }));
      return { router, c, id, payloadCh, ackCh };
    }));
    const [t1, t2] = ends;
    await expect.poll(async () => ((await n.c.call('GET', '/fabric/v1/links', { token: n.admin })).body.data as { id: string }[]).filter((l) => l.id === t1.id || l.id === t2.id).length, { timeout: 3000 }).toBe(2);
    // Hosted at t2 only; dialed at t1: the path is t1 -> ztc's router -> t2.
    const service2 = await n.service('mesh-transit');
    const transitHost = await n.identity('mesh-transit-host', ['mesh-transit-hosts']);
    const transitClient = await n.identity('mesh-transit-client', ['mesh-transit-clients']);
    const bind = await n.session(transitHost, service2, 'Bind');
    await t2.c.replyTo(t2.c.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'transit-term', sessionToken: bind, fingerprints: [fp(transitHost.cert)] })));
    const dial = await n.session(transitClient, service2, 'Dial');
    const ask = t1.c.send(T.CreateCircuitV2, [[11, Buffer.from(dial)], [12, strings([fp(transitClient.cert)])]]);
    const at1 = decode(Schemas.Route, (await t1.c.next((f) => f.type === T.Route)).body);
    const at2 = decode(Schemas.Route, (await t2.c.next((f) => f.type === T.Route)).body);
    expect(at1.forwards[0]).toMatchObject({ dstAddress: t1.id, dstType: DestType.Link });
    expect(at2.forwards[1]).toMatchObject({ srcAddress: t2.id, dstType: DestType.End });
    for (const [e, at] of [[t1, at1], [t2, at2]] as const) e.c.send(T.RouteResult, [[1101, le32(at.attempt ?? 0)], [1102, one]], Buffer.from(at.circuitId));
    const answer = await t1.c.replyTo(ask);
    expect(answer.type).toBe(T.CreateCircuitV2Response);
    const circuitId = answer.headers.get(11)!.toString();
    // A payload from t1 arrives at t2 as it was sent (its circuit, sequence, flags and data), and an ack back.
    t1.payloadCh.send(...payload(circuitId, 0, F.Start));
    t1.payloadCh.send(...payload(circuitId, 1, 0, Buffer.from('through the middle')));
    const got = [await t2.payloadCh.next(fresh()), await t2.payloadCh.next(fresh())];
    expect(got.map((f) => [circuitOf(f), seqOf(f), flagsOf(f), f.body.toString()])).toEqual([[circuitId, 0, F.Start, ''], [circuitId, 1, 0, 'through the middle']]);
    t2.ackCh.send(X.Ack, [[X.CircuitId, Buffer.from(circuitId)], [X.Flags, le32(F.Originator)], [X.RecvBuffer, le32(0)], [X.RTT, Buffer.from([0, 0])]], Buffer.from([0, 0, 0, 1]));
    const ack = await t1.ackCh.next((f) => f.type === X.Ack);
    expect([circuitOf(ack), ack.body.readInt32BE(0), flagsOf(ack)]).toEqual([circuitId, 1, F.Originator]);
    // And back: t2's host answers, t1 gets it.
    t2.payloadCh.send(...payload(circuitId, 0, F.Originator, Buffer.from('and back')));
    expect((await t1.payloadCh.next((f) => f.type === X.Payload)).body.toString()).toBe('and back');
    for (const e of ends) for (const p of [e.c, e.payloadCh, e.ackCh]) p.close();
  });
});
