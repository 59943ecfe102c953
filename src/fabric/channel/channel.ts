// One channel V2 connection over a stream socket: framing, our own sequence numbers, requests matched to
// their replies by the ReplyFor header, replies that reflect headers 128..255, and input that can be
// paused while a destination it feeds is full (TCP then slows the sender: backpressure, not buffers).
import type { Socket } from 'node:net';
import { EMPTY, encodeHead, FRAME_LIMITS, FrameDecoder, FrameError, i32, type FrameLimits, type Message, readInt32 } from './codec.js';
import { Backpressure, type Flow } from './backpressure.js';
import type { ListenerGuard } from './guard.js';
import { Header } from './messages.js';

export interface ChannelEvents {
  message(m: Message): void;
  /** Once, whatever ended the channel; `error` says why when it was not a clean close. */
  closed(error?: Error): void;
}

/** Bytes queued for the socket above which the channel counts as full. */
export const HIGH_WATER = 4 * 1024 * 1024;

/**
 * A body larger than this (a Large model's router data model: 4.3 MB) is written SLICE bytes at a time,
 * more only while the socket holds less than SLICED_QUEUE: a TLS socket keeps, for as long as it lives,
 * buffers as large as what it was handed at once (measured: 300 connections each written 4.3 MB in one
 * write held 1.3 GB after; in 64 KB slices, 80 MB). Frames sent meanwhile follow it, in order.
 */
const SLICED_OVER = 1024 * 1024;
const SLICE = 64 * 1024;
const SLICED_QUEUE = 256 * 1024;

/**
 * Paced writing (setPacing): at most `frames` frames go out per `intervalMs`, the rest wait their turn in
 * order; when a burst has all gone out (an interval passed with nothing to write), `idle` hears how many
 * frames it had. For peers that take in a bounded number of messages per read (the C SDK before 0.36:
 * edge/legacy-c-sdk.ts).
 */
export interface Pacing {
  frames: number;
  intervalMs: number;
  idle?(burst: number): void;
}

export class Channel implements Flow {
  private seq = 0;
  private waiters = new Map<number, { resolve(m: Message): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  private decoder: FrameDecoder;
  /** Destinations this channel waits for, and the sources waiting for this one. */
  private readonly flow = new Backpressure(this);
  closed = false;
  /** When bytes last arrived (ms since the epoch): whether the peer is still there (the control channel asks before letting a second connection of a router in). */
  lastReceivedAt = Date.now();
  private handlers?: ChannelEvents;
  /** When the frame in progress began to arrive (or reading resumed after a pause); 0: none in progress. */
  partialSince = 0;
  private pacing?: Pacing;
  /** Paced frames waiting for their turn (head, body), their bytes, the frames of this turn, the burst's. */
  private waiting: [Buffer, Buffer][] = [];
  private waitingBytes = 0;
  private turnFrames = 0;
  private burst = 0;
  private turn?: NodeJS.Timeout;
  /** A large body being written slice by slice (what is left of it), and the frames sent since, waiting for it. */
  private slicing?: { body: Buffer; at: number };
  private behind: [Buffer, Buffer][] = [];
  private behindBytes = 0;
  /** Callers of drained() waiting. */
  private drainWaiters: (() => void)[] = [];

  /** `guard`: the listener's deadline and budget for frames in progress (guard.ts), on accepted connections. */
  constructor(readonly socket: Socket, limits: FrameLimits = FRAME_LIMITS, private readonly guard?: ListenerGuard) {
    this.decoder = new FrameDecoder(limits);
    guard?.add(this);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (e) => this.close(e));
    socket.on('close', () => this.close());
    socket.on('end', () => this.close());
    socket.on('drain', () => {
      if (this.slicing) this.moreSlices();
      if (!this.slicing) this.flow.releaseAll();
      this.checkDrained();
    });
  }

  /** Start delivering messages (frames that arrived earlier are delivered in order). */
  attach(handlers: ChannelEvents) {
    this.handlers = handlers;
  }

  setLimits(limits: FrameLimits) {
    this.decoder.limits = limits;
  }

  /** Bytes held for the frame in progress. */
  get partialBytes() {
    return this.decoder.pending;
  }

  /** The declared size of the frame in progress (0 until its prefix arrived). */
  get partialExpected() {
    return this.decoder.expected;
  }

  /** Whether reading is paused by backpressure (a destination of this channel is full). */
  get paused() {
    return this.flow.paused;
  }

  private onData(chunk: Buffer) {
    if (this.closed) return;
    this.lastReceivedAt = Date.now();
    let messages: Message[];
    const before = this.decoder.pending;
    try {
      messages = this.decoder.push(chunk);
    } catch (e) {
      this.close(e instanceof FrameError ? e : new FrameError(String(e)));
      return;
    }
    if (this.guard) {
      const after = this.decoder.pending;
      // A new frame in progress (none before, or the one before completed): its deadline starts now.
      if (!after) this.partialSince = 0;
      else if (!before || messages.length) this.partialSince = Date.now();
      if (after !== before) this.guard.changed(this, after - before);
      if (this.closed) return;
    }
    for (const m of messages) {
      if (this.closed) return;
      const replyFor = readInt32(m.headers.get(Header.ReplyFor));
      const waiter = replyFor === undefined ? undefined : this.waiters.get(replyFor);
      if (waiter) {
        this.waiters.delete(replyFor!);
        clearTimeout(waiter.timer);
        waiter.resolve(m);
        continue;
      }
      try {
        this.handlers?.message(m);
      } catch (e) {
        this.close(e as Error);
      }
    }
  }

  /** Send with our next sequence number; returns that number. Nothing is sent once closed. */
  send(m: Message): number {
    if (this.closed) return -1;
    if (m.seq === 0) m.seq = ++this.seq;
    const head = encodeHead(m);
    if (this.pacing) this.paced(head, m.body, this.pacing);
    else this.write(head, m.body);
    return m.seq;
  }

  private write(head: Buffer, body: Buffer) {
    if (this.slicing) {
      this.behind.push([head, body]);
      this.behindBytes += head.length + body.length;
      return;
    }
    if (body.length > SLICED_OVER) {
      this.socket.write(head);
      this.slicing = { body, at: 0 };
      this.moreSlices();
      return;
    }
    if (body.length) {
      this.socket.cork();
      this.socket.write(head);
      this.socket.write(body);
      this.socket.uncork();
    } else this.socket.write(head);
  }

  /** The next slices of the large body, while the socket holds less than SLICED_QUEUE; then what waited behind it. */
  private moreSlices() {
    const s = this.slicing!;
    while (s.at < s.body.length) {
      if (this.closed || this.socket.writableLength >= SLICED_QUEUE) return;
      this.socket.write(s.body.subarray(s.at, s.at + SLICE));
      s.at += SLICE;
    }
    this.slicing = undefined;
    const behind = this.behind;
    this.behind = [];
    this.behindBytes = 0;
    // A large one among them slices again, and those after it wait behind it again, in order.
    for (const [head, body] of behind) this.write(head, body);
  }

  /**
   * Resolves once what was sent has left this process (no large body being sliced, and the socket
   * needs no drain: at most its high-water mark is still held), or the channel closed.
   */
  drained(): Promise<void> {
    if (this.isDrained()) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private isDrained() {
    return this.closed || (!this.slicing && !this.socket.writableNeedDrain);
  }

  private checkDrained() {
    if (!this.drainWaiters.length || !this.isDrained()) return;
    for (const w of this.drainWaiters.splice(0)) w();
  }

  /** Write at most `frames` frames per interval from now on (see Pacing). */
  setPacing(p: Pacing) {
    this.pacing = p;
  }

  /** Frames waiting for their turn. */
  get held() {
    return this.waiting.length;
  }

  private paced(head: Buffer, body: Buffer, p: Pacing) {
    this.burst++;
    if (!this.waiting.length && this.turnFrames < p.frames) {
      this.turnFrames++;
      this.write(head, body);
    } else {
      this.waiting.push([head, body]);
      this.waitingBytes += head.length + body.length;
    }
    this.turn ??= setTimeout(() => this.nextTurn(p), p.intervalMs);
  }

  /** A new interval: the frames waiting go out, `frames` of them; a turn with nothing to write ends the burst. */
  private nextTurn(p: Pacing) {
    this.turn = undefined;
    if (this.closed) return;
    this.turnFrames = 0;
    while (this.waiting.length && this.turnFrames < p.frames) {
      const [head, body] = this.waiting.shift()!;
      this.waitingBytes -= head.length + body.length;
      this.turnFrames++;
      this.write(head, body);
    }
    if (this.turnFrames) this.turn = setTimeout(() => this.nextTurn(p), p.intervalMs);
    else {
      const burst = this.burst;
      this.burst = 0;
      p.idle?.(burst);
    }
    // Sources held back for what waited here read again once it is out (the socket may never have filled).
    if (!this.full && this.flow.holds && !this.socket.writableNeedDrain) this.flow.releaseAll();
  }

  /** Send and wait for the message whose ReplyFor names it. */
  request(m: Message, timeoutMs: number): Promise<Message> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('channel closed'));
      m.seq = ++this.seq;
      const timer = setTimeout(() => {
        this.waiters.delete(m.seq);
        reject(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.set(m.seq, { resolve, reject, timer });
      this.send(m);
    });
  }

  /** Answer `to`: ReplyFor = its sequence, and its headers 128..255 copied as upstream's channel does. */
  reply(to: Message, m: Message): number {
    for (const [k, v] of to.headers) if (k >= Header.ReflectedFirst && k <= Header.ReflectedLast && !m.headers.has(k)) m.headers.set(k, v);
    m.headers.set(Header.ReplyFor, i32(to.seq));
    return this.send(m);
  }

  /** Whether the socket (and the frames waiting for their turn) hold more than HIGH_WATER bytes not yet written. */
  get full(): boolean {
    return this.socket.writableLength + this.waitingBytes + this.behindBytes + (this.slicing ? this.slicing.body.length - this.slicing.at : 0) > HIGH_WATER;
  }

  /**
   * Stop reading this channel until `dest` drains: what this channel sends is relayed to `dest`, whose
   * peer reads slower than ours writes. All virtual connections of this channel wait (as upstream's).
   */
  pauseFor(dest: Flow) {
    if (this.flow.waitFor(dest)) this.socket.pause();
  }

  hold(source: Flow) {
    this.flow.hold(source);
  }

  /** `by` drained (or closed): this channel reads again, unless another still holds it. */
  released(by: Flow) {
    if (this.flow.freedBy(by) && !this.closed) {
      // Time paused was ours, not the peer's: a frame in progress gets its whole deadline again.
      if (this.partialSince) this.partialSince = Date.now();
      this.socket.resume();
    }
  }

  close(error?: Error) {
    if (this.closed) return;
    // A clean close says its last words: what waited for its turn goes out before the end (the rest of a
    // sliced body and what was behind it first, all at once now).
    if (!error && this.socket.writable) {
      const rest = [...(this.slicing ? [[EMPTY, this.slicing.body.subarray(this.slicing.at)] as [Buffer, Buffer]] : []), ...this.behind, ...this.waiting];
      this.slicing = undefined;
      for (const [head, body] of rest) for (const b of [head, body]) if (b.length) this.socket.write(b);
    }
    this.slicing = undefined;
    this.behind = [];
    this.behindBytes = 0;
    this.waiting = [];
    this.waitingBytes = 0;
    if (this.turn) clearTimeout(this.turn);
    this.closed = true;
    this.guard?.remove(this);
    this.decoder.clear();
    this.partialSince = 0;
    for (const w of this.waiters.values()) {
      clearTimeout(w.timer);
      w.reject(new Error('channel closed'));
    }
    this.waiters.clear();
    this.flow.releaseAll();
    for (const w of this.drainWaiters.splice(0)) w();
    // A clean close ends the stream, and destroys it soon after in any case: a peer that stopped reading
    // must not hold the socket (and its address's slot) open.
    if (error) this.socket.destroy();
    else {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), 1000).unref();
    }
    this.handlers?.closed(error);
  }
}

export { EMPTY };
