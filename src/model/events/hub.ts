// The one place events go: emit() is synchronous and cheap, so emitting on a request path costs
// neither I/O nor serialisation. Sinks: the audit table's batcher (audit-store.ts), in-process
// subscribers (told at once, with the event object), and the sinks that want text: the events file
// (file-sink.ts, when configured) and the live streams (the SSE stream of GET /events). Those get the
// events a moment later, in order and in batches: each event serialised once, off the request that
// emitted it, and a batch handed to each stream as one write.
import os from 'node:os';
import type { Store } from '../../store/db.js';
import { iso } from '../clock.js';
import { newId } from '../ids.js';
import { AuditBatcher, auditRow, isStored } from './audit-store.js';
import { FileSink, type FileSinkOptions } from './file-sink.js';
import type { ZtcEvent } from './types.js';

/** An in-process subscriber: the event object, as it is emitted. */
type Subscriber = (e: ZtcEvent) => void;
/** A live stream: a batch of events in emission order, and the JSON text of each (made once for all sinks). */
export type StreamSubscriber = (events: readonly ZtcEvent[], lines: readonly string[]) => void;

/** How long an event waits to be serialised with the next ones (a person watching a stream cannot tell). */
const DRAIN_MS = 50;
/** A burst this large is serialised at the next turn instead, so the queue stays small. */
const DRAIN_AT = 2000;

/** Fields every event has, filled by the hub. */
export type Unstamped<E extends ZtcEvent = ZtcEvent> = E extends ZtcEvent ? Omit<E, 'event_src_id' | 'timestamp'> & { timestamp?: string } : never;

export class Events {
  /** Names this controller process in every event (upstream: the controller's id). */
  readonly srcId = `${os.hostname()}:${process.pid}`;
  private readonly subscribers = new Set<Subscriber>();
  private readonly streams = new Set<StreamSubscriber>();
  /** Events waiting to be serialised for the file and the streams. */
  private queued: ZtcEvent[] = [];
  private drainTimer?: NodeJS.Timeout;
  private drainSoon?: NodeJS.Immediate;
  private file?: FileSink;
  private readonly audit?: AuditBatcher;

  constructor(store: Store | undefined, private readonly now: () => Date = () => new Date()) {
    if (store) this.audit = new AuditBatcher(store);
  }

  /** Start writing the events file (serve only: the CLI's local mode leaves it to the server). */
  openFile(o: FileSinkOptions) {
    this.file = new FileSink(o);
  }

  stamp<E extends ZtcEvent>(e: Unstamped<E>): E {
    return { ...e, event_src_id: this.srcId, timestamp: e.timestamp ?? iso(this.now()) } as unknown as E;
  }

  /**
   * Hand an event to every sink. `stored`: its audit row was written already (an entity change,
   * in its write's transaction).
   */
  emit(e: ZtcEvent, stored = false) {
    if (!stored && this.audit && isStored(e)) this.audit.add(auditRow(newId(12), e));
    for (const s of this.subscribers) {
      try {
        s(e);
      } catch {
        // a subscriber's failure is its own; the others still hear
      }
    }
    if (!this.file && !this.streams.size) return;
    this.queued.push(e);
    if (this.queued.length >= DRAIN_AT) this.drainSoon ??= setImmediate(() => this.drain());
    else if (!this.drainTimer) {
      // Unref'd: flush() and close() drain what is queued, so a timer need not hold the process open.
      this.drainTimer = setTimeout(() => this.drain(), DRAIN_MS);
      this.drainTimer.unref();
    }
  }

  /** Serialise what is queued, once each, and hand it to the file and every stream in emission order. */
  private drain() {
    if (this.drainTimer) clearTimeout(this.drainTimer);
    if (this.drainSoon) clearImmediate(this.drainSoon);
    this.drainTimer = this.drainSoon = undefined;
    const batch = this.queued;
    if (!batch.length) return;
    this.queued = [];
    const lines = batch.map((e) => JSON.stringify(e));
    this.file?.writeLines(lines);
    for (const s of this.streams) {
      try {
        s(batch, lines);
      } catch {
        // a stream's failure is its own (a closed connection); the others still hear
      }
    }
  }

  /** Hear every event as it is emitted (in-process: the import's thread, tests). */
  subscribe(fn: Subscriber): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  /** Hear events as text, in batches (the live stream): events emitted before this are not included. */
  subscribeStream(fn: StreamSubscriber): () => void {
    // What is queued was emitted before the stream opened: drained now, it goes to the others only.
    this.drain();
    this.streams.add(fn);
    return () => this.streams.delete(fn);
  }

  get subscriberCount() {
    return this.subscribers.size + this.streams.size;
  }

  /** Why a sink is failing, if one is (for the health checks). */
  problems(): string[] {
    return [this.file?.lastError && `events file: ${this.file.lastError}`, this.audit?.lastError && `audit store: ${this.audit.lastError}`].filter((x): x is string => !!x);
  }

  /** Write out what is queued (at shutdown, and in tests). */
  async flush() {
    this.drain();
    await Promise.all([this.file?.flush(), this.audit?.flush()]);
  }

  /** Write out what is queued and close the events file (at shutdown). */
  async close() {
    this.drain();
    await Promise.all([this.file?.close(), this.audit?.flush()]);
    this.file = undefined;
  }
}
