// The embedded edge router against a test peer that speaks the SDK side of the edge protocol byte by byte
// (test/peers/edge-sdk.ts, from ../shared/reference/edge-protocol.md): what the C SDK journey does not
// show. A real controller over TLS, real certificates and API sessions, a real SQLite file.
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { CT, EdgePeer, frame, H, le32, one, type Frame } from '../peers/edge-sdk.js';

let n: TestNetwork;
let host: Member;
let client: Member;
let stranger: Member;
let echo: string;
beforeAll(async () => {
  n = await startNetwork({ headersTimeoutSeconds: 2, maxConnectionsPerAddress: 40 });
  echo = await n.service('echo');
  host = await n.identity('host-1', ['echo-hosts']);
  client = await n.identity('client-1', ['echo-clients']);
  stranger = await n.identity('stranger', ['echo-clients']);
}, 60_000);
afterAll(() => n.close());

const u32 = (f: Frame, h: number) => f.headers.get(h)!.readUInt32LE(0);
const text = (f: Frame) => f.body.toString('utf8');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Bind the echo service from a fresh channel; returns the peer and its bind token. */
async function bound(o: { assign?: boolean; bindSuccess?: boolean; who?: Member; connId?: number } = {}) {
  const who = o.who ?? host;
  const p = await n.peer(who);
  const token = await n.session(who, echo, 'Bind');
  const connId = o.connId ?? 1;
  const headers: [number, Buffer][] = [[H.ConnId, le32(connId)], [H.Seq, le32(0)], [H.PublicKey, Buffer.alloc(32, 7)]];
  if (o.assign) headers.push([H.RouterProvidedConnId, one]);
  if (o.bindSuccess) headers.push([H.SupportsBindSuccess, one]);
  const seq = p.send(CT.Bind, headers, Buffer.from(token));
  const reply = await p.replyTo(seq);
  expect(reply.type, text(reply)).toBe(CT.StateConnected);
  return { p, token, reply, connId };
}

async function dialer(who: Member = client) {
  const p = await n.peer(who);
  const token = await n.session(who, echo, 'Dial');
  return { p, token };
}

describe('hello and keep-alive', () => {
  it('answers the hello as SDKs expect: ReplyFor = the hello sequence, success, a 5-field version, BindSuccess offered', async () => {
    const p = await EdgePeer.connect(n.routerPort, { cert: client.cert, key: client.key });
    p.send(CT.Hello, [[H.SessionToken, Buffer.from(client.token)]], Buffer.from('go'), -1);
    const r = await p.next((f) => f.type === CT.Result);
    expect(r.headers.get(H.ReplyFor)!.readInt32LE(0)).toBe(-1);
    expect(r.headers.get(H.ResultSuccess)).toEqual(one);
    expect(r.headers.get(H.Version)!.toString().split('|')).toHaveLength(5);
    expect(r.headers.get(1024)).toEqual(one);
    expect(r.headers.get(H.Id)!.toString()).toBe(n.routerId);
    // The hello deadline (2 s here) is over for an accepted channel: still open after it.
    await sleep(2500);
    expect(p.closed).toBe(false);
    // Latency probe: a Result that reflects header 128.
    const stamp = Buffer.from('0102030405060708', 'hex');
    const seq = p.send(CT.Latency, [[H.Uuid, stamp]]);
    const probe = await p.replyTo(seq);
    expect(probe.type).toBe(CT.Result);
    expect(probe.headers.get(H.Uuid)).toEqual(stamp);
    p.close();
  });

  it('closes a channel whose token is unknown, or whose certificate is not the API session\'s, without a failure Result', async () => {
    for (const [cert, key, token] of [
      [client.cert, client.key, 'not-a-token'],
      [stranger.cert, stranger.key, client.token],
    ]) {
      const p = await EdgePeer.connect(n.routerPort, { cert, key });
      p.send(CT.Hello, [[H.SessionToken, Buffer.from(token)]], Buffer.from('x'), 0);
      await p.whenClosed(3000);
      expect(p.inbox.filter((f) => f.type === CT.Result)).toEqual([]);
    }
  });

  it('closes a connection without a client certificate, and one whose first frame is not a hello', async () => {
    const anonymous = await EdgePeer.connect(n.routerPort);
    await anonymous.whenClosed(3000);
    const p = await EdgePeer.connect(n.routerPort, { cert: client.cert, key: client.key });
    p.send(CT.Ping, []);
    await p.whenClosed(3000);
  });
});

describe('bind and dial', () => {
  it('legacy conn ids (C SDK 0.29): Dial with the bind token and keys, StateConnected to both, data and FIN both ways, close', async () => {
    const h = await bound();
    const terminators = (await n.api('GET', `/terminators?filter=${encodeURIComponent(`service = "${echo}"`)}`)).body.data;
    expect(terminators).toHaveLength(1);
    expect(terminators[0]).toMatchObject({ binding: 'edge', routerId: n.routerId, router: { id: n.routerId } });
    expect((await n.api('GET', `/terminators?filter=${encodeURIComponent(`hostId = "${host.id}"`)}`)).body.data).toHaveLength(1);

    const d = await dialer();
    const dialerKey = Buffer.alloc(32, 9);
    const connect = d.p.send(CT.Connect, [[H.ConnId, le32(5)], [H.Seq, le32(0)], [H.PublicKey, dialerKey], [H.CallerId, Buffer.from('client-1')]], Buffer.from(d.token));
    const dial = await h.p.next((f) => f.type === CT.Dial);
    expect(text(dial)).toBe(h.token);
    expect(u32(dial, H.ConnId)).toBe(h.connId);
    expect(dial.headers.get(H.PublicKey)).toEqual(dialerKey);
    expect(dial.headers.get(H.CallerId)!.toString()).toBe('client-1');
    expect(dial.headers.get(H.RouterProvidedConnId)).toBeUndefined();
    // The C SDK answers with its own id and waits for StateConnected before it sends anything.
    const ok = h.p.send(CT.DialSuccess, [[H.ConnId, le32(h.connId)], [H.Seq, le32(0)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], le32(77));
    const hostConnected = await h.p.replyTo(ok);
    expect(hostConnected.type).toBe(CT.StateConnected);
    const connected = await d.p.replyTo(connect);
    expect(connected.type).toBe(CT.StateConnected);
    expect(connected.headers.get(H.PublicKey)).toEqual(Buffer.alloc(32, 7));
    expect(connected.headers.get(H.CircuitId)!.toString()).toBe(dial.headers.get(H.CircuitId)!.toString());

    d.p.send(CT.Data, [[H.ConnId, le32(5)], [H.Seq, le32(1)]], Buffer.from('ping'));
    const atHost = await h.p.next((f) => f.type === CT.Data);
    expect(u32(atHost, H.ConnId)).toBe(77);
    expect(text(atHost)).toBe('ping');
    h.p.send(CT.Data, [[H.ConnId, le32(77)], [H.Seq, le32(1)], [H.Uuid, Buffer.alloc(16, 3)]], Buffer.from('pong'));
    const atDialer = await d.p.next((f) => f.type === CT.Data);
    expect(u32(atDialer, H.ConnId)).toBe(5);
    expect(text(atDialer)).toBe('pong');
    expect(atDialer.headers.get(H.Uuid)).toEqual(Buffer.alloc(16, 3));
    // Half close travels as an empty Data with the FIN flag, copied byte for byte; the other way stays open.
    d.p.send(CT.Data, [[H.ConnId, le32(5)], [H.Seq, le32(2)], [H.Flags, le32(1)]]);
    const fin = await h.p.next((f) => f.type === CT.Data);
    expect(fin.body.length).toBe(0);
    expect(fin.headers.get(H.Flags)).toEqual(le32(1));
    h.p.send(CT.Data, [[H.ConnId, le32(77)], [H.Seq, le32(2)]], Buffer.from('after fin'));
    expect(text(await d.p.next((f) => f.type === CT.Data))).toBe('after fin');
    // The dialer closes: the host hears it, with a reason (never an empty body).
    d.p.send(CT.StateClosed, [[H.ConnId, le32(5)], [H.Seq, le32(3)]]);
    const closed = await h.p.next((f) => f.type === CT.StateClosed);
    expect(u32(closed, H.ConnId)).toBe(77);
    expect(closed.body.length).toBeGreaterThan(0);
    // The host's channel goes: its terminator goes with it.
    h.p.close();
    await expect.poll(async () => (await n.api('GET', `/terminators?filter=${encodeURIComponent(`service = "${echo}"`)}`)).body.data.length, { timeout: 3000 }).toBe(0);
    d.p.close();
  });

  it('router-assigned conn ids (Go SDK, C SDK 1.x): 1012 on the Dial, BindSuccess when asked, host data that races ahead waits for the dialer', async () => {
    const h = await bound({ assign: true, bindSuccess: true, connId: 3 });
    expect(h.reply.headers.get(H.RouterProvidedConnId)).toEqual(one);
    const bs = await h.p.next((f) => f.type === CT.BindSuccess);
    expect(u32(bs, H.ConnId)).toBe(3);
    const d = await dialer();
    const connect = d.p.send(CT.Connect, [[H.ConnId, le32(9)], [H.Seq, le32(0)], [H.PublicKey, Buffer.alloc(32, 1)]], Buffer.from(d.token));
    const dial = await h.p.next((f) => f.type === CT.Dial);
    const assigned = u32(dial, H.RouterProvidedConnId);
    expect(assigned).toBeGreaterThanOrEqual(2 ** 31);
    h.p.send(CT.DialSuccess, [[H.ConnId, le32(3)], [H.Seq, le32(0)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], le32(assigned));
    // The host's crypto header right after DialSuccess, before the dialer is connected.
    h.p.send(CT.Data, [[H.ConnId, le32(assigned)], [H.Seq, le32(1)]], Buffer.from('early'));
    const first = await d.p.next((f) => f.type === CT.StateConnected || f.type === CT.Data);
    expect(first.type).toBe(CT.StateConnected);
    expect(first.headers.get(H.ReplyFor)!.readInt32LE(0)).toBe(connect);
    expect(text(await d.p.next((f) => f.type === CT.Data))).toBe('early');
    // No StateConnected goes to the host in this mode.
    await sleep(100);
    expect(h.p.inbox.filter((f) => f.type === CT.StateConnected)).toEqual([]);
    // The host goes away mid-stream: the dialer hears it.
    h.p.close();
    const closed = await d.p.next((f) => f.type === CT.StateClosed);
    expect(u32(closed, H.ConnId)).toBe(9);
    d.p.close();
  });

  it('refuses a Dial session used to Bind, another identity\'s session, a service nobody hosts, and a missing key on an encrypted service', async () => {
    const p = await n.peer(client);
    const dialToken = await n.session(client, echo, 'Dial');
    let seq = p.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(dialToken));
    let r = await p.replyTo(seq);
    expect(r.type).toBe(CT.StateClosed);
    expect(text(r)).toMatch(/incorrect session type/);

    const strangers = await n.session(stranger, echo, 'Dial');
    seq = p.send(CT.Connect, [[H.ConnId, le32(2)], [H.Seq, le32(0)]], Buffer.from(strangers));
    r = await p.replyTo(seq);
    expect(r.type).toBe(CT.StateClosed);
    expect(text(r)).toMatch(/invalid api session/);

    seq = p.send(CT.Connect, [[H.ConnId, le32(3)], [H.Seq, le32(0)]], Buffer.from(dialToken));
    r = await p.replyTo(seq);
    expect(r.type).toBe(CT.StateClosed);
    expect(text(r)).toMatch(/has no terminator/);

    seq = p.send(CT.Connect, [[H.ConnId, le32(4)], [H.Seq, le32(0)]], Buffer.from('no-such-token'));
    expect(text(await p.replyTo(seq))).toMatch(/invalid session/);

    const secret = await n.service('secret', { encryptionRequired: true });
    await n.api('PATCH', `/identities/${client.id}`, { roleAttributes: ['echo-clients', 'secret-clients'] });
    const secretToken = await n.session(client, secret, 'Dial');
    seq = p.send(CT.Connect, [[H.ConnId, le32(6)], [H.Seq, le32(0)]], Buffer.from(secretToken));
    expect(text(await p.replyTo(seq))).toMatch(/encryption required/);
    p.close();
  });

  it('a host that sends DialFailed fails the dial with its reason', async () => {
    const h = await bound();
    const d = await dialer();
    const connect = d.p.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(d.token));
    const dial = await h.p.next((f) => f.type === CT.Dial);
    h.p.send(CT.DialFailed, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], Buffer.from('upstream refused'));
    const r = await d.p.replyTo(connect);
    expect(r.type).toBe(CT.StateClosed);
    expect(text(r)).toMatch(/upstream refused/);
    h.p.close();
    d.p.close();
  });
});

describe('ending sessions ends connections within a second', () => {
  async function circuit() {
    const h = await bound({ assign: true });
    const d = await dialer();
    const connect = d.p.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(d.token));
    const dial = await h.p.next((f) => f.type === CT.Dial);
    h.p.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], le32(u32(dial, H.RouterProvidedConnId)));
    await d.p.replyTo(connect);
    return { h, d };
  }

  it('logout closes the dialer\'s channel; the host hears the end of the circuit', async () => {
    const who = await n.identity('leaver', ['echo-clients']);
    const h = await bound();
    const p = await n.peer(who);
    const token = await n.session(who, echo, 'Dial');
    const connect = p.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(token));
    const dial = await h.p.next((f) => f.type === CT.Dial);
    h.p.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], le32(5));
    await h.p.next((f) => f.type === CT.StateConnected);
    await p.replyTo(connect);
    expect((await n.c.call('DELETE', `${CLIENT}/current-api-session`, { token: who.token })).status).toBe(200);
    await p.whenClosed(2500);
    expect(u32(await h.p.next((f) => f.type === CT.StateClosed, 2500), H.ConnId)).toBe(5);
    h.p.close();
  });

  it('deleting the dial session ends its connection; deleting the bind session removes the terminator', async () => {
    const { h, d } = await circuit();
    const sessions = (await n.api('GET', `/sessions?filter=${encodeURIComponent(`identityId = "${client.id}"`)}&limit=500`)).body.data as { id: string }[];
    for (const s of sessions) await n.api('DELETE', `/sessions/${s.id}`);
    const closed = await d.p.next((f) => f.type === CT.StateClosed, 2500);
    expect(text(closed)).toMatch(/session closed/);
    const bindSessions = (await n.api('GET', `/sessions?filter=${encodeURIComponent(`identityId = "${host.id}" and type = "Bind"`)}&limit=500`)).body.data as { id: string }[];
    for (const s of bindSessions) await n.api('DELETE', `/sessions/${s.id}`);
    await expect.poll(async () => (await n.api('GET', `/terminators?filter=${encodeURIComponent(`hostId = "${host.id}"`)}`)).body.data.length, { timeout: 2500 }).toBe(0);
    h.p.close();
    d.p.close();
  });

  it('disabling an identity closes its channels', async () => {
    const who = await n.identity('to-disable', ['echo-clients']);
    const p = await n.peer(who);
    expect((await n.api('POST', `/identities/${who.id}/disable`, { durationMinutes: 0 })).status).toBe(200);
    await p.whenClosed(2500);
  });
});

describe('bad input on the edge port', () => {
  it('closes on a wrong magic, an oversized frame and a malformed header block, and keeps serving', async () => {
    for (const bad of [
      Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'),
      (() => { const f = frame(CT.Data, 1, []); f.writeInt32LE(64 * 1024 * 1024, 16); return f; })(),
      (() => { const f = frame(CT.Data, 1, [[H.ConnId, le32(1)]]); f.writeInt32LE(4000, 24); return f; })(),
    ]) {
      const p = await n.peer(client);
      p.write(bad);
      await p.whenClosed(3000);
    }
    // Still serving.
    (await n.peer(client)).close();
  });

  it('closes a silent connection and a trickled hello at the deadline, and frees the address\'s slots', async () => {
    const started = Date.now();
    const silent = net.connect(n.routerPort, '127.0.0.1');
    const closedSilent = new Promise<void>((r) => silent.on('close', () => r()));
    silent.on('error', () => {});
    const trickle = await EdgePeer.connect(n.routerPort, { cert: client.cert, key: client.key });
    const hello = frame(CT.Hello, 0, [[H.SessionToken, Buffer.from(client.token)]]);
    const timer = setInterval(() => !trickle.closed && trickle.write(hello.subarray(0, 1)), 300);
    await closedSilent;
    await trickle.whenClosed(4000);
    clearInterval(timer);
    expect(Date.now() - started).toBeLessThan(4000);

    // 40 silent TCP connections fill the cap: the next one closes the oldest of them at once (silent
    // sockets cannot lock the address out; test/fabric/data-plane-limits.test.ts); once they close, all is free.
    const held = await Promise.all(Array.from({ length: 40 }, () => new Promise<net.Socket>((r) => { const s = net.connect(n.routerPort, '127.0.0.1', () => r(s)); s.on('error', () => {}); })));
    await sleep(100);
    const newcomer = net.connect(n.routerPort, '127.0.0.1');
    newcomer.on('error', () => {});
    await new Promise<void>((r) => held[0].on('close', () => r()));
    expect(newcomer.destroyed).toBe(false);
    newcomer.destroy();
    for (const s of held) s.destroy();
    await sleep(200);
    (await n.peer(client)).close();
  }, 20_000);
});

describe('the router record', () => {
  it('is online, verified, public, and what clients see with a tls:// address; unenrolled routers are offered offline, with no address', async () => {
    const er = (await n.api('GET', `/edge-routers/${n.routerId}`)).body.data;
    expect(er).toMatchObject({ isOnline: true, isVerified: true, roleAttributes: ['public'], supportedProtocols: { tls: `tls://localhost:${n.routerPort}` } });
    await n.api('POST', '/edge-routers', { name: 'never-enrolled' });
    const seen = (await n.c.call('GET', `${CLIENT}/current-identity/edge-routers`, { token: client.token })).body.data as { name: string; supportedProtocols: Record<string, string> }[];
    expect(seen.map((r) => r.name)).toEqual([er.name]);
    const s = await n.c.call('POST', `${CLIENT}/sessions`, { token: client.token, body: { serviceId: echo, type: 'Dial' } });
    // A session lists what the policies allow, as upstream: the online router first, the unenrolled one offline and without urls.
    expect(s.body.data.edgeRouters.map((r: { name: string; isOnline: boolean }) => [r.name, r.isOnline])).toEqual([[er.name, true], ['never-enrolled', false]]);
    expect(s.body.data.edgeRouters[0].urls).toEqual({ tls: `tls://localhost:${n.routerPort}` });
    expect(s.body.data.edgeRouters[1].urls).toEqual({});
    // Its certificate names the advertised host and chains to the CA bundle clients hold.
    const sock = tls.connect({ host: '127.0.0.1', port: n.routerPort, servername: 'localhost', ca: n.c.running.ctx.pki.caBundlePem, cert: client.cert, key: client.key });
    await new Promise<void>((resolve, reject) => { sock.once('secureConnect', () => resolve()); sock.once('error', reject); });
    expect(sock.authorized).toBe(true);
    sock.destroy();
  });
});
