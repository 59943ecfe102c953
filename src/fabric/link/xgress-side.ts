// One end of a circuit whose other end is on another router: to the circuit code (circuits.ts) it is a
// side like an SDK's, whose "channel" turns the edge messages it is sent into xgress payloads on the
// link the forwarder names, and the payloads that arrive into edge Data for its peer. It keeps upstream's
// xgress rules: the dialing end (initiator) sends CircuitStart first and the terminator's end sends
// nothing before it arrives; each end numbers its payloads from 0, acknowledges every payload it
// receives, ends with CircuitEnd; and a sender keeps what the far end has not acknowledged (plus what it
// says it still buffers) under a window, so an upstream receiver never drops for a full buffer.
import { Backpressure, type Flow } from '../channel/backpressure.js';
import { message, type Message } from '../channel/codec.js';
import { ContentType, Header } from '../channel/messages.js';
import { closeSide, connected, relay, type Endpoint, type SideConn } from '../circuits.js';
import type { Fabric } from '../fabric.js';
import type { Link } from './link.js';
import { encodeAck, encodePayload, originatorFlag, originatorOf, PayloadKey, XgressFlag, type Ack, type Originator, type Payload } from './xgress.js';

/** Bytes in flight (sent and not acknowledged, plus the far end's reported buffer) before the side counts as full. */
export const XGRESS_WINDOW = 2 * 1024 * 1024;
/** How often unacknowledged payloads are looked at, and the bounds of when one is overdue (ms). */
const RESEND_CHECK_MS = 100;
const RESEND_MIN_MS = 200;
const RESEND_MAX_MS = 2000;
/** How long an end that sent CircuitEnd waits for what it sent to be acknowledged before the circuit goes. */
const CLOSE_WAIT_MS = 5000;
/** Out-of-order payloads kept for their turn; beyond it they are dropped unacknowledged (the sender resends). */
const REORDER_CAP = 4 * 1024 * 1024;

/** What a side needs of the router it lives on (link/local-router.ts). */
export interface SideHost {
  readonly fabric: Fabric;
  /** Send a payload or an ack of this side to where the circuit's forwarding sends it. */
  out(side: XgressSide, m: Message, ack: boolean): void;
  /** The link this side's payloads leave on (for backpressure). */
  linkOf(side: XgressSide): Link | undefined;
  /** This end of the circuit closed (its peer, or the far end): the circuit is over. */
  sideClosed(side: XgressSide): void;
}

export class XgressSide implements SideConn, Flow {
  readonly channel = this;
  closed = false;
  endpoint!: Endpoint;
  private nextSeq = 0;
  /** Payloads sent and not acknowledged: resent when an ack is overdue (a receiver with a full buffer drops). */
  private unacked = new Map<number, { p: Payload; at: number }>();
  private unackedBytes = 0;
  private resendTimer?: NodeJS.Timeout;
  /** Smoothed round trip (ms) from the acks' echo of our clock. */
  private rtt = 100;
  private peerBuffer = 0;
  private delivered = -1;
  private reorder = new Map<number, Payload>();
  private reorderBytes = 0;
  private chunked?: { data: Buffer; at: number; headers: Map<number, Buffer> };
  private readonly flow = new Backpressure(this);
  private endSent = false;
  private started: boolean;

  constructor(
    private readonly host: SideHost,
    readonly circuitId: string,
    /** Its address in the circuit's forwarding (the ingress or egress id). */
    readonly address: string,
    readonly originator: Originator,
  ) {
    this.started = originator === 'initiator';
  }

  get fabric() {
    return this.host.fabric;
  }

  /** The circuit code let go of this side: what ends it is the StateClosed it is sent next (send), or the far end. */
  forget(_ep: Endpoint) {}

  /** The circuit was taken down (Unroute, a link lost): the peer hears why; nothing more goes out. */
  abort(reason: string) {
    if (this.closed) return;
    this.closed = true;
    this.stopResending();
    this.flow.releaseAll();
    const peer = this.endpoint.peer;
    if (peer && !peer.closed) closeSide(peer, reason, true);
    else closeSide(this.endpoint, reason, false);
  }

  /** The initiator's first payload: the terminator's end may send from now on. */
  start() {
    this.emit(XgressFlag.CircuitStart, new Map(), Buffer.alloc(0));
  }

  /** Edge messages for the far end, from the circuit code: Data becomes a payload, StateClosed the circuit's end. */
  send(m: Message): number {
    if (this.closed) return -1;
    if (m.type === ContentType.Data) {
      const headers = new Map<number, Buffer>();
      const uuid = m.headers.get(Header.UUID);
      const flags = m.headers.get(Header.Flags);
      if (uuid) headers.set(PayloadKey.Uuid, uuid);
      if (flags) headers.set(PayloadKey.EdgeFlags, flags);
      this.emit(0, headers, m.body);
    } else if (m.type === ContentType.StateClosed) {
      this.end();
    }
    return 0;
  }

  private emit(flags: number, headers: Map<number, Buffer>, data: Buffer) {
    const p: Payload = { circuitId: this.circuitId, flags: flags | originatorFlag(this.originator), sequence: this.nextSeq++, headers, data };
    this.unacked.set(p.sequence, { p, at: Date.now() });
    this.unackedBytes += data.length;
    this.resendTimer ??= setInterval(() => this.resendOverdue(), RESEND_CHECK_MS).unref();
    this.host.out(this, encodePayload(p), false);
  }

  /** Upstream's rule: a payload whose ack has not come within a few round trips is sent again. */
  private resendOverdue() {
    if (this.closed && !this.endSent) return this.stopResending();
    const now = Date.now();
    const overdue = Math.min(RESEND_MAX_MS, Math.max(RESEND_MIN_MS, this.rtt * 2 + 100));
    for (const u of this.unacked.values()) {
      if (now - u.at < overdue) continue;
      u.at = now;
      this.host.out(this, encodePayload({ ...u.p, flags: u.p.flags | XgressFlag.Retransmit }), false);
    }
  }

  private stopResending() {
    if (this.resendTimer) clearInterval(this.resendTimer);
    this.resendTimer = undefined;
  }

  /** Send CircuitEnd (once) and let go. */
  end() {
    if (!this.endSent && !this.closed) {
      this.endSent = true;
      this.emit(XgressFlag.CircuitEnd, new Map(), Buffer.alloc(0));
    }
    this.finish();
  }

  private finish() {
    if (this.closed) return;
    this.closed = true;
    this.reorder.clear();
    this.flow.releaseAll();
    // What is still unacknowledged (CircuitEnd among it) may need resending: the circuit stays routed
    // until it is acknowledged, or for CLOSE_WAIT_MS at most (upstream flushes its send buffer too).
    if (!this.unacked.size) return this.done();
    this.closeWait = setTimeout(() => this.done(), CLOSE_WAIT_MS);
    this.closeWait.unref();
  }

  private closeWait?: NodeJS.Timeout;
  private finished = false;

  private done() {
    if (this.finished) return;
    this.finished = true;
    if (this.closeWait) clearTimeout(this.closeWait);
    this.stopResending();
    this.host.sideClosed(this);
  }

  // ---- from the far end

  received(p: Payload) {
    // Ended here and still routed (waiting for our last payloads' acks): what comes is acknowledged, not delivered.
    if (this.finished || (this.closed && !this.endSent)) return;
    // Ours come back only through a routing loop: upstream drops them too.
    if (originatorOf(p.flags) === this.originator) return;
    if (p.sequence > this.delivered + 1) {
      if (this.reorderBytes + p.data.length > REORDER_CAP) return;
      if (!this.reorder.has(p.sequence)) {
        this.reorder.set(p.sequence, p);
        this.reorderBytes += p.data.length;
      }
    } else if (p.sequence === this.delivered + 1 && this.closed) {
      this.delivered = p.sequence;
    } else if (p.sequence === this.delivered + 1) {
      this.deliver(p);
      for (let next = this.reorder.get(this.delivered + 1); next && !this.closed; next = this.reorder.get(this.delivered + 1)) {
        this.reorder.delete(next.sequence);
        this.reorderBytes -= next.data.length;
        this.deliver(next);
      }
    }
    // A duplicate (a resend that crossed our ack) is acknowledged again, as upstream does.
    if (!this.finished)
      this.host.out(this, encodeAck({ circuitId: this.circuitId, flags: originatorFlag(this.originator), sequences: [p.sequence], recvBufferSize: this.reorderBytes, rtt: p.rtt }), true);
  }

  private deliver(p: Payload) {
    this.delivered = p.sequence;
    if (p.flags & XgressFlag.CircuitStart) {
      if (!this.started) {
        this.started = true;
        connected(this.endpoint);
      }
      return;
    }
    if (p.flags & XgressFlag.CircuitEnd) {
      this.closed = true;
      this.stopResending();
      this.flow.releaseAll();
      closeSide(this.endpoint, '', false);
      this.host.sideClosed(this);
      return;
    }
    let data = p.data;
    let headers = p.headers;
    if (p.flags & XgressFlag.Chunk) {
      const whole = this.unchunk(p);
      if (!whole) return;
      ({ data, headers } = whole);
    }
    const m = message(ContentType.Data, [], data);
    const flags = headers.get(PayloadKey.EdgeFlags);
    const uuid = headers.get(PayloadKey.Uuid);
    if (flags) m.headers.set(Header.Flags, flags);
    if (uuid) m.headers.set(Header.UUID, uuid);
    this.fabric.bytesIn += data.length;
    relay(this.endpoint, m);
  }

  /** A sender with an MTU splits a write: the first chunk starts with the whole size (a signed varint). */
  private unchunk(p: Payload): { data: Buffer; headers: Map<number, Buffer> } | undefined {
    if (!this.chunked) {
      let size = 0;
      let shift = 0;
      let i = 0;
      for (; i < p.data.length && i < 10; i++) {
        size += (p.data[i] & 0x7f) * 2 ** shift;
        shift += 7;
        if (!(p.data[i] & 0x80)) break;
      }
      // Zig-zag, as Go's binary.Varint writes it.
      size = size % 2 ? -(size + 1) / 2 : size / 2;
      if (size < 0 || size > 64 * 1024 * 1024) {
        this.closeWithError();
        return undefined;
      }
      this.chunked = { data: Buffer.alloc(size), at: 0, headers: p.headers };
      p = { ...p, data: p.data.subarray(i + 1) };
    }
    const c = this.chunked;
    const n = Math.min(p.data.length, c.data.length - c.at);
    p.data.copy(c.data, c.at, 0, n);
    c.at += n;
    if (c.at < c.data.length) return undefined;
    this.chunked = undefined;
    return { data: c.data, headers: c.headers };
  }

  private closeWithError() {
    if (this.closed) return;
    closeSide(this.endpoint, 'a malformed payload arrived over the link', false);
    this.end();
  }

  acked(a: Ack) {
    for (const seq of a.sequences) {
      const u = this.unacked.get(seq);
      if (!u) continue;
      this.unacked.delete(seq);
      this.unackedBytes -= u.p.data.length;
    }
    if (a.rtt?.length === 2) {
      const sample = (Date.now() - a.rtt.readUInt16LE(0)) & 0xffff;
      if (sample < 30_000) this.rtt = (this.rtt * 7 + sample) / 8;
    }
    if (a.recvBufferSize !== undefined && a.recvBufferSize !== 0xffffffff) this.peerBuffer = a.recvBufferSize;
    if (!this.unacked.size) {
      // Nothing to resend: no timer while the circuit idles (thousands of idle circuits wake nothing).
      this.stopResending();
      if (this.endSent) this.done();
    }
    if (this.flow.holds && !this.full) this.flow.releaseAll();
  }

  // ---- backpressure (Flow)

  get full(): boolean {
    return this.unackedBytes + this.peerBuffer > XGRESS_WINDOW || !!this.host.linkOf(this)?.full;
  }

  /** Data from the far end waits: the link stops being read until `dest` (the SDK's channel) drains. */
  pauseFor(dest: Flow) {
    this.host.linkOf(this)?.payloadCh.pauseFor(dest);
  }

  hold(source: Flow) {
    this.flow.hold(source);
    // A full link releases when it drains; a full window when acks come (acked()).
    this.host.linkOf(this)?.onDrain(() => {
      if (!this.full) this.flow.releaseAll();
    });
  }

  released(_by: Flow) {}
}
