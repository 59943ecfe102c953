// The one place events go: emit() is synchronous and cheap (it hands the event to the sinks, each of
// which only queues it), so emitting on a request path costs no I/O. Sinks: the events file
// (file-sink.ts, when configured), the audit table's batcher (audit-store.ts) and the live subscribers
// (the SSE stream of GET /events).
import os from 'node:os';
import type { Store } from '../../store/db.js';
import { iso } from '../clock.js';
import { newId } from '../ids.js';
import { AuditBatcher, auditRow, STORED } from './audit-store.js';
import { FileSink, type FileSinkOptions } from './file-sink.js';
import type { ZtcEvent } from './types.js';

/** A live subscriber: the event, and its JSON text (made once for the file and every subscriber). */
type Subscriber = (e: ZtcEvent, json: string) => void;

/** Fields every event has, filled by the hub. */
export type Unstamped<E extends ZtcEvent = ZtcEvent> = E extends ZtcEvent ? Omit<E, 'event_src_id' | 'timestamp'> & { timestamp?: string } : never;

export class Events {
  /** Names this controller process in every event (upstream: the controller's id). */
  readonly srcId = `${os.hostname()}:${process.pid}`;
  private readonly subscribers = new Set<Subscriber>();
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
    if (!stored && this.audit && STORED.has(e.namespace)) this.audit.add(auditRow(newId(12), e));
    if (this.file || this.subscribers.size) {
      const line = JSON.stringify(e);
      this.file?.write(line);
      for (const s of this.subscribers) {
        try {
          s(e, line);
        } catch {
          // a subscriber's failure is its own (a closed stream); the others still hear
        }
      }
    }
  }

  subscribe(fn: Subscriber): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  get subscriberCount() {
    return this.subscribers.size;
  }

  /** Why a sink is failing, if one is (for the health checks). */
  problems(): string[] {
    return [this.file?.lastError && `events file: ${this.file.lastError}`, this.audit?.lastError && `audit store: ${this.audit.lastError}`].filter((x): x is string => !!x);
  }

  /** Write out what is queued (at shutdown, and in tests). */
  async flush() {
    await Promise.all([this.file?.flush(), this.audit?.flush()]);
  }

  /** Write out what is queued and close the events file (at shutdown). */
  async close() {
    await Promise.all([this.file?.close(), this.audit?.flush()]);
    this.file = undefined;
  }
}
