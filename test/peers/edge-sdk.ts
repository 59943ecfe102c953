// A test peer for the SDK side of the edge protocol, written from ../shared/reference/edge-protocol.md
// (not from src/fabric): its own framing, so a codec bug on either side shows as a mismatch. It does what
// the C SDK does not show: wrong tokens, foreign certificates, malformed frames, both conn-id modes.
import tls from 'node:tls';

export const CT = {
  Hello: 0, Ping: 1, Result: 2, Latency: 3,
  Connect: 60783, StateConnected: 60784, StateClosed: 60785, Data: 60786, Dial: 60787, DialSuccess: 60788, DialFailed: 60789,
  Bind: 60790, Unbind: 60791, UpdateBind: 60794, TraceRoute: 60796, TraceRouteResponse: 60797, BindSuccess: 60800,
} as const;
export const H = {
  ReplyFor: 1, ResultSuccess: 2, Version: 4, Id: 8, Uuid: 128,
  ConnId: 1000, Seq: 1001, SessionToken: 1002, PublicKey: 1003, Cost: 1004, Precedence: 1005, Instance: 1006, CallerId: 1008,
  Flags: 1010, RouterProvidedConnId: 1012, ListenerId: 1021, SupportsBindSuccess: 1024, CircuitId: 1026,
} as const;

export interface Frame {
  type: number;
  seq: number;
  headers: Map<number, Buffer>;
  body: Buffer;
}

export const le32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};
export const one = Buffer.from([1]);

/** The 20-byte prefix (magic 03 06 09 0C, type, seq, header length, body length), headers, body. */
export function frame(type: number, seq: number, headers: [number, Buffer][], body: Buffer = Buffer.alloc(0)): Buffer {
  const hs = Buffer.concat(headers.map(([k, v]) => Buffer.concat([Buffer.from(new Int32Array([k, v.length]).buffer), v])));
  const prefix = Buffer.alloc(20);
  Buffer.from([3, 6, 9, 12]).copy(prefix);
  prefix.writeInt32LE(type, 4);
  prefix.writeInt32LE(seq, 8);
  prefix.writeInt32LE(hs.length, 12);
  prefix.writeInt32LE(body.length, 16);
  return Buffer.concat([prefix, hs, body]);
}

export class EdgePeer {
  private chunks: Buffer[] = [];
  private pending = 0;
  private seq = 0;
  /** Sees every frame first; returning true consumes it (bulk Data in benchmarks). */
  onFrame?: (f: Frame) => boolean;
  readonly inbox: Frame[] = [];
  private waiters: { match: (f: Frame) => boolean; resolve: (f: Frame) => void; closed: () => void }[] = [];
  closed = false;
  private closeWaiters: (() => void)[] = [];

  constructor(readonly socket: tls.TLSSocket) {
    socket.on('data', (d: Buffer) => this.onData(d));
    const done = () => {
      this.closed = true;
      for (const w of this.closeWaiters) w();
      // No frame comes after the close: whoever waits for one is told now, not at its deadline.
      for (const w of this.waiters.splice(0)) w.closed();
    };
    socket.on('close', done);
    socket.on('error', () => {});
  }

  static connect(port: number, o: { cert?: string; key?: string; ca?: string; alpn?: string[] } = {}): Promise<EdgePeer> {
    return new Promise((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', cert: o.cert, key: o.key, ca: o.ca, rejectUnauthorized: !!o.ca, ALPNProtocols: o.alpn }, () => resolve(new EdgePeer(s)));
      // As Go's and the C SDK's sockets: no Nagle delay on small frames.
      s.setNoDelay(true);
      // Every error before the handshake ends rejects (a reset can come as two); after it, the peer's own handler takes them.
      s.on('error', reject);
    });
  }

  private onData(d: Buffer) {
    // Chunks are joined only when a whole frame is there (bulk streams arrive in many chunks per frame).
    this.chunks.push(d);
    this.pending += d.length;
    while (this.pending >= 20) {
      if (this.chunks[0].length < 20) this.chunks = [Buffer.concat(this.chunks)];
      const head = this.chunks[0];
      const hl = head.readInt32LE(12);
      const bl = head.readInt32LE(16);
      const total = 20 + hl + bl;
      if (this.pending < total) return;
      const all = this.chunks.length === 1 ? head : Buffer.concat(this.chunks);
      const headers = new Map<number, Buffer>();
      for (let at = 20; at < 20 + hl; ) {
        const k = all.readInt32LE(at);
        const n = all.readInt32LE(at + 4);
        headers.set(k, all.subarray(at + 8, at + 8 + n));
        at += 8 + n;
      }
      const f: Frame = { type: all.readInt32LE(4), seq: all.readInt32LE(8), headers, body: all.subarray(20 + hl, total) };
      const rest = all.subarray(total);
      this.chunks = rest.length ? [rest] : [];
      this.pending -= total;
      if (this.onFrame?.(f)) continue;
      const w = this.waiters.findIndex((x) => x.match(f));
      if (w >= 0) this.waiters.splice(w, 1)[0].resolve(f);
      else this.inbox.push(f);
    }
  }

  write(raw: Buffer) {
    this.socket.write(raw);
  }

  send(type: number, headers: [number, Buffer][], body?: Buffer, seq = ++this.seq): number {
    this.socket.write(frame(type, seq, headers, body));
    return seq;
  }

  /**
   * The next frame that matches (from the inbox first), or a rejection after `ms` or when the connection
   * closes. The default is a net for a loaded machine (the suite runs files side by side); a test that
   * expects no frame passes its own, short, `ms`.
   */
  next(match: (f: Frame) => boolean, ms = 15_000): Promise<Frame> {
    const i = this.inbox.findIndex(match);
    if (i >= 0) return Promise.resolve(this.inbox.splice(i, 1)[0]);
    // A StateClosed says why in its body: shown, so a refused dial or bind names its reason.
    const seen = () => this.inbox.map((f) => (f.type === CT.StateClosed ? `${f.type} '${f.body.toString('utf8')}'` : f.type)).join(',');
    if (this.closed) return Promise.reject(new Error(`connection closed before a matching frame (inbox: ${seen()})`));
    return new Promise((resolve, reject) => {
      const w = {
        match,
        resolve: (f: Frame) => (clearTimeout(t), resolve(f)),
        closed: () => (clearTimeout(t), reject(new Error(`connection closed before a matching frame (inbox: ${seen()})`))),
      };
      const t = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`no matching frame within ${ms} ms (inbox: ${seen()})`));
      }, ms);
      this.waiters.push(w);
    });
  }

  replyTo(seq: number, ms?: number) {
    return this.next((f) => f.headers.get(H.ReplyFor)?.readInt32LE(0) === seq, ms);
  }

  whenClosed(ms = 5000): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
      this.closeWaiters.push(() => (clearTimeout(t), resolve()));
    });
  }

  /**
   * Hello with the API session token, as the C SDK sends it (sequence 0): as the C SDK 0.29 by default,
   * which the router writes to a few frames at a time (src/fabric/edge/legacy-c-sdk.ts); `current`: as a
   * C SDK from 0.36.5 on (SupportsInspect, header 1023), written to as fast as its socket takes.
   */
  async hello(token: string, seq = 0, o: { current?: boolean } = {}): Promise<Frame> {
    this.send(CT.Hello, [[H.SessionToken, Buffer.from(token)], ...(o.current ? ([[1023, one]] as [number, Buffer][]) : [])], Buffer.from('ziti-sdk-c[0]@test'), seq);
    return this.next((f) => f.type === CT.Result);
  }

  close() {
    this.socket.destroy();
  }
}
