// What one client can make the data plane hold, and whom it can lock out, through the real edge and
// control ports (raw TLS clients, test/peers). A logged-in SDK that announces a large frame and stalls
// is closed at the frame deadline; many of them together cannot hold more than the port's budget of
// partial frames (the largest holders are closed); silent sockets from one address fill its cap of
// connections not yet authenticated, yet an SDK or a router of that address still gets in (the oldest
// silent socket goes); each of these closes is counted in the metrics. Deadline and budget are set
// small here (ZTC_FRAME_DEADLINE_MS, ZTC_PARTIAL_FRAME_BUDGET) so the test runs in seconds.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { connectRouter, enrollRouter } from '../peers/ctrl-router.js';
import { CT, EdgePeer, frame, H, le32 } from '../peers/edge-sdk.js';

const MiB = 1024 * 1024;
const DEADLINE_MS = 1500;
const BUDGET = 4 * MiB;
const CAP = 20;

let n: TestNetwork;
let client: Member;
let host: Member;
let echo: string;
beforeAll(async () => {
  process.env.ZTC_FRAME_DEADLINE_MS = String(DEADLINE_MS);
  process.env.ZTC_PARTIAL_FRAME_BUDGET = String(BUDGET);
  process.env.ZTC_STATS_MS = '100';
  // A hello deadline long enough that silent sockets stay for the whole test unless the cap closes them.
  n = await startNetwork({ headersTimeoutSeconds: 30, maxConnectionsPerAddress: CAP });
  echo = await n.service('limits');
  client = await n.identity('limits-client', ['limits-clients']);
  host = await n.identity('limits-host', ['limits-hosts']);
}, 60_000);
afterAll(async () => {
  await n.close();
  delete process.env.ZTC_FRAME_DEADLINE_MS;
  delete process.env.ZTC_PARTIAL_FRAME_BUDGET;
  delete process.env.ZTC_STATS_MS;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One sample of the scrape, read from its text. */
async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const text = (await n.c.call('GET', '/metrics', { token: n.admin })).text;
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    if (want.every((w) => inside.split(',').includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return NaN;
}

/** Once the data plane has reported (every 100 ms here) a value that passes `ok`. */
async function reported(name: string, labels: Record<string, string>, ok: (v: number) => boolean): Promise<number> {
  let v = NaN;
  // Generous: on a loaded machine ten peers' megabytes take a while to arrive; the poll ends as soon as it holds.
  await expect.poll(async () => ok((v = await metric(name, labels))), { timeout: 20_000, interval: 100 }).toBe(true);
  return v;
}

/** A Data frame's prefix and headers announcing `bodyBytes` of body, with `sent` of them. */
function announce(bodyBytes: number, sent: number): Buffer {
  const f = frame(CT.Data, 1, [[H.ConnId, le32(1)], [H.Seq, le32(1)]], Buffer.alloc(sent, 7));
  f.writeInt32LE(bodyBytes, 16);
  return f;
}

describe('frames in progress on the edge port', () => {
  it('a logged-in SDK that announces 8 MiB and stalls is closed at the frame deadline', async () => {
    const before = (await metric('ztc_connections_closed_total', { listener: 'edge', reason: 'frame_deadline' })) || 0;
    const p = await n.peer(client);
    const started = Date.now();
    p.write(announce(8 * MiB, 256 * 1024));
    await p.whenClosed(DEADLINE_MS + 3000);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(DEADLINE_MS - 100);
    await reported('ztc_connections_closed_total', { listener: 'edge', reason: 'frame_deadline' }, (v) => v >= before + 1);
  });

  it('a channel busy for longer than the deadline is not cut: each of its frames completes at once', async () => {
    const p = await n.peer(client);
    const small = frame(CT.Ping, 0, [], Buffer.alloc(16 * 1024, 1));
    const until = Date.now() + DEADLINE_MS * 2;
    while (Date.now() < until) {
      p.write(small);
      await sleep(50);
    }
    // Latency probe answered: the channel is up.
    const seq = p.send(CT.Latency, [[H.Uuid, Buffer.alloc(8, 1)]]);
    expect((await p.replyTo(seq)).type).toBe(CT.Result);
    expect(p.closed).toBe(false);
    p.close();
  });

  it(`many stalled frames together hold at most the budget (${BUDGET / MiB} MiB): the largest holders are closed`, async () => {
    const before = (await metric('ztc_connections_closed_total', { listener: 'edge', reason: 'frame_budget' })) || 0;
    const peers: EdgePeer[] = [];
    let most = 0;
    const sampler = setInterval(() => void metric('ztc_partial_frame_bytes', { listener: 'edge' }).then((v) => (most = Math.max(most, v || 0)), () => {}), 50);
    try {
      // Ten connections each send 1 MiB of an announced 8 MiB frame: 10 MiB against a 4 MiB budget. All
      // logged in first, then written at once: on a loaded machine logins spread over seconds, and the
      // first frames then met their deadline before the budget was ever exceeded.
      for (let i = 0; i < 10; i++) peers.push(await n.peer(client));
      for (const p of peers) p.write(announce(8 * MiB, MiB));
      await reported('ztc_connections_closed_total', { listener: 'edge', reason: 'frame_budget' }, (v) => v >= before + 6);
      expect(peers.filter((p) => p.closed).length).toBeGreaterThanOrEqual(6);
      await reported('ztc_partial_frame_bytes', { listener: 'edge' }, (v) => v <= BUDGET);
      expect(most).toBeLessThanOrEqual(BUDGET);
    } finally {
      clearInterval(sampler);
      for (const p of peers) p.close();
    }
    // Closed connections hold nothing.
    await reported('ztc_partial_frame_bytes', { listener: 'edge' }, (v) => v === 0);
  });

  it('legitimate traffic is unaffected: 16 MiB relayed in 64 KiB frames while the budget is 4 MiB', async () => {
    const h = await n.peer(host);
    const bseq = h.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.RouterProvidedConnId, Buffer.from([1])]], Buffer.from(await n.session(host, echo, 'Bind')));
    expect((await h.replyTo(bseq)).type).toBe(CT.StateConnected);
    const d = await n.peer(client);
    const cseq = d.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(await n.session(client, echo, 'Dial')));
    const dial = await h.next((f) => f.type === CT.Dial);
    const hostConn = dial.headers.get(H.RouterProvidedConnId)!;
    h.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], hostConn);
    expect((await d.replyTo(cseq)).type).toBe(CT.StateConnected);
    let received = 0;
    h.onFrame = (f) => {
      if (f.type !== CT.Data) return false;
      received += f.body.length;
      return true;
    };
    const body = Buffer.alloc(64 * 1024, 3);
    for (let sent = 0; sent < 16 * MiB; sent += body.length) d.send(CT.Data, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], body);
    await expect.poll(() => received, { timeout: 20_000, interval: 100 }).toBe(16 * MiB);
    expect(d.closed || h.closed).toBe(false);
    h.close();
    d.close();
  }, 30_000);
});

describe('silent sockets cannot lock an address out', () => {
  /** `count` TCP connections from 127.0.0.1 that never send a byte, open on the server's side. */
  async function silent(port: number, count: number): Promise<net.Socket[]> {
    const sockets = await Promise.all(Array.from({ length: count }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', () => {});
    })));
    await sleep(200);
    return sockets;
  }

  it(`${CAP} silent sockets fill the edge port's cap, yet an SDK from the same address logs in; the closes are counted`, async () => {
    const before = (await metric('ztc_connections_refused_total', { listener: 'edge', reason: 'address_cap' })) || 0;
    // Connected before the flood: an established SDK is not counted against the cap, and stays.
    const established = await n.peer(client);
    const held = await silent(n.routerPort, CAP);
    const closed = held.map((s) => new Promise<void>((r) => (s.destroyed ? r() : s.once('close', () => r()))));
    // A new SDK connection: the oldest silent socket goes to make room for it.
    const late = await n.peer(host);
    await closed[0];
    expect(held.filter((s) => !s.destroyed).length).toBe(CAP - 1);
    // And the address stays open to more of them: once `late` is accepted it no longer counts, so the
    // first of these takes the free place and the next two each close the oldest silent socket.
    const more = await Promise.all([n.peer(client), n.peer(host), n.peer(client)]);
    await reported('ztc_connections_refused_total', { listener: 'edge', reason: 'address_cap' }, (v) => v >= before + 3);
    expect(held.filter((s) => !s.destroyed).length).toBeLessThanOrEqual(CAP - 3);
    const seq = established.send(CT.Latency, [[H.Uuid, Buffer.alloc(8, 2)]]);
    expect((await established.replyTo(seq)).type).toBe(CT.Result);
    for (const p of [established, late, ...more]) p.close();
    for (const s of held) s.destroy();
  }, 20_000);

  it(`${CAP} silent sockets on the control port do not keep a router out`, async () => {
    const ctrlPort = n.c.running.fabric!.ctrlPort!;
    const router = await enrollRouter(n, 'limits-router');
    const held = await silent(ctrlPort, CAP);
    const { p, result } = await connectRouter(ctrlPort, router);
    expect(result?.headers.get(2)).toEqual(Buffer.from([1]));
    expect(p.closed).toBe(false);
    await reported('ztc_connections_refused_total', { listener: 'ctrl', reason: 'address_cap' }, (v) => v >= 1);
    p.close();
    for (const s of held) s.destroy();
  }, 20_000);
});
