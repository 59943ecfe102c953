// What the clients of one channel listener (the SDKs' edge port, the routers' control port) may hold
// together, beyond what the codec bounds per connection (one frame of at most 8 MiB of body): a frame in
// progress must complete within FRAME_DEADLINE_MS, and the frames in progress of all its connections
// together hold at most PARTIAL_FRAME_BUDGET bytes. Without them, a logged-in SDK that announced 8 MiB
// frames and stopped midway held 8 MiB per connection (measured: 60 connections took the controller from
// 165 to 646 MiB of RSS; the 256 connections one address may open, 2 GiB). Also the listener's counts
// for the metrics: connections closed by these limits and by the per-address cap (channel/listener.ts).
import { FrameError } from './codec.js';

const MiB = 1024 * 1024;
const fromEnv = (name: string) => {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : undefined;
};

/**
 * How long a frame may take from its first byte to its last: 30 s. SDKs write a frame whole, so a live
 * peer finishes one in milliseconds: the C SDK relays in frames of about 64 KiB (17 kbit/s gets one
 * through in time), and the largest frame accepted (8 MiB, a Go SDK's single large write) needs
 * 2.2 Mbit/s. Time a channel spends paused by backpressure (its destination is full: we stopped
 * reading it) does not count; the clock starts again when it is read again.
 * ZTC_FRAME_DEADLINE_MS overrides it (the tests use a second or two).
 */
export const FRAME_DEADLINE_MS = fromEnv('ZTC_FRAME_DEADLINE_MS') ?? 30_000;

/**
 * Bytes the frames in progress of one listener's connections may hold together: 64 MiB, the most any
 * set of clients can make the controller keep in partial frames on that port (edge and control each
 * have their own). Legitimate traffic holds far less: a stream's frame is in progress only while its
 * bytes cross the socket, so 1,000 C SDK streams mid-frame at once (64 KiB each) fit, or eight 8 MiB
 * frames. When a connection's next bytes would go over it, the connection holding the largest frame in
 * progress is closed (a stalled 8 MiB announcement goes before a live stream's 64 KiB frame), until
 * they fit. ZTC_PARTIAL_FRAME_BUDGET (bytes) overrides it.
 */
export const PARTIAL_FRAME_BUDGET = fromEnv('ZTC_PARTIAL_FRAME_BUDGET') ?? 64 * MiB;

/** A listener's counts, reported to the main thread's metrics (totals since start, and bytes held now). */
export interface ListenerCounts {
  /** Connections closed by the per-address cap on connections not yet authenticated. */
  refusedAddressCap: number;
  /** Connections closed because a frame did not complete within FRAME_DEADLINE_MS. */
  closedFrameDeadline: number;
  /** Connections closed because partial frames would have held more than the budget. */
  closedFrameBudget: number;
  /** Bytes held in partial frames now. */
  partialFrameBytes: number;
}

type Warn = (o: object, msg: string) => void;

/** A connection as the guard watches it (channel.ts Channel): its frame in progress, and how to end it. */
export interface Guarded {
  readonly closed: boolean;
  readonly paused: boolean;
  readonly partialBytes: number;
  readonly partialExpected: number;
  readonly partialSince: number;
  readonly socket: { readonly remoteAddress?: string };
  close(error?: Error): void;
}

export class ListenerGuard {
  /**
   * Where this thread's channel listeners tell a failed TLS handshake, or a peer whose certificate they
   * refused (ziti#1834): the data plane's worker points it at its events (model/events/tls-failures.ts).
   */
  static tlsFailed?: (listener: string, address: string, why: unknown) => void;
  readonly counts: ListenerCounts = { refusedAddressCap: 0, closedFrameDeadline: 0, closedFrameBudget: 0, partialFrameBytes: 0 };
  private readonly channels = new Set<Guarded>();
  private sweeper?: NodeJS.Timeout;

  constructor(
    /** 'edge' or 'ctrl': in log lines and metric labels. */
    readonly name: string,
    private readonly warn: Warn,
    readonly budget = PARTIAL_FRAME_BUDGET,
    readonly deadlineMs = FRAME_DEADLINE_MS,
  ) {}

  /** Bytes held in partial frames by this listener's connections now. */
  get held() {
    return this.counts.partialFrameBytes;
  }

  /** Look for stalled frames a few times per deadline (at least every second). */
  start() {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweep(), Math.min(1000, Math.max(50, this.deadlineMs / 4)));
    this.sweeper.unref();
  }

  stop() {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  add(c: Guarded) {
    this.channels.add(c);
  }

  /** The channel closed: what its partial frame held is free. */
  remove(c: Guarded) {
    if (!this.channels.delete(c)) return;
    this.counts.partialFrameBytes -= c.partialBytes;
  }

  /** A channel's partial frame grew or shrank by `delta` bytes; over the budget, the largest holders go. */
  changed(c: Guarded, delta: number) {
    this.counts.partialFrameBytes += delta;
    while (this.counts.partialFrameBytes > this.budget) {
      let largest = c;
      for (const other of this.channels) if (other.partialBytes > largest.partialBytes) largest = other;
      if (largest.closed || largest.partialBytes === 0) break; // cannot happen: the held bytes are some channel's
      const held = largest.partialBytes;
      this.counts.closedFrameBudget++;
      this.warn(
        { listener: this.name, address: largest.socket.remoteAddress, held, budget: this.budget },
        `${this.name}: closed the connection holding the largest unfinished frame: unfinished frames on this port would hold more than ${this.budget} bytes`,
      );
      largest.close(new FrameError(`unfinished frames on this port would hold more than ${this.budget} bytes; this connection held ${held}`));
    }
  }

  private sweep() {
    const now = Date.now();
    for (const c of [...this.channels]) {
      if (!c.partialSince || c.paused || now - c.partialSince <= this.deadlineMs) continue;
      const { partialBytes: received, partialExpected: declared } = c;
      this.counts.closedFrameDeadline++;
      this.warn(
        { listener: this.name, address: c.socket.remoteAddress, declared, received, deadlineMs: this.deadlineMs },
        `${this.name}: closed a connection whose frame did not complete within ${this.deadlineMs / 1000} s (${received} of ${declared || 'at least 20'} bytes received)`,
      );
      c.close(new FrameError(`a frame did not complete within ${this.deadlineMs} ms`));
    }
  }
}
