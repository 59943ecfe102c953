// The router data model as this controller serves it to 2.x routers (ctrl-channel-2.x.md sections 1.4
// and 2.3). A reading of the store (model/router-data-model.ts) is the model. When something routers see
// changed (an entity change of an identity, service, policy, config, posture check, CA or controller was
// recorded, on whichever controller made it: the model's change events as the store keeps them, looked
// for every CHECK_MS and at once when this controller's API wrote one), the last reading is patched with
// the changed identities and policies and the small kinds read whole (snapshot.ts patchSnapshot); the
// whole model is read at the first subscription, every FULL_REREAD_MS as a backstop, when an identity's
// timed disable ends, and when a patch cannot be made. When a reading differs from the last one, its
// difference goes to every subscribed router as one change set with the next index, encoded once for
// all. A router that subscribes gets a full DataState (built once per index and shared by every router
// sent it, written to FULL_AT_ONCE routers at a time) unless it already holds our latest index on our
// timeline (a renewal; or a reconnect within this process), or the change sets since its index (kept
// for the last LOG_SIZE changes). Every message to a subscribed router carries its subscription id
// (1026): the router drops any other. Each process has a timeline of its own (its index starts from the
// clock and counts changes): a router holding another controller's or an earlier run's model is sent a
// full one. Our index goes to every 2.x router every 30 s when it advanced.
import { randomUUID } from 'node:crypto';
import type { Ctx } from '../../model/context.js';
import { CHANGES_READ, newestRouterModelChange, readRouterDataModelPart, readRouterDataModelWhole, routerModelChanges } from '../../model/router-data-model.js';
import { str } from '../channel/codec.js';
import { encode } from '../channel/protobuf.js';
import { CtrlHeader, CtrlType } from '../ctrl/messages.js';
import type { FabricLog } from '../fabric.js';
import { publicKeys } from './public-keys.js';
import { RdmSchemas } from './schemas.js';
import { changes, fullState, keyEvents, patchSnapshot, wholeSnapshot, type Snapshot, type Touched } from './snapshot.js';

/** What the sender needs of a router's connection. */
export interface RdmRouter {
  readonly name: string;
  readonly closed: boolean;
  send(type: number, body: Buffer, headers?: [number, Buffer][]): void;
  /** Resolves once what was sent has left this process (or the connection closed). */
  drained?(): Promise<void>;
}

interface Subscription {
  id: string;
  /** Its lease (ms since the epoch): changes are sent while it lasts. */
  until: number;
  /** The index the router holds (as far as we sent it). */
  index: bigint;
  /** Waiting for its turn to be sent the full state (FULL_AT_ONCE): it is sent the latest then, no change set before. */
  waitingFull?: boolean;
}

/**
 * How often recorded changes are looked for; the longest between two readings of the small kinds
 * regardless (revocations expire, replaced keys age); and between two readings of the whole model (a
 * backstop: every change routers see is recorded and patched in).
 */
const CHECK_MS = 1000;
const REREAD_MS = 30_000;
const FULL_REREAD_MS = Math.max(1000, Number(process.env.ZTC_RDM_FULL_MS ?? 300_000) || 300_000);
/** More identities changed than this in one look: the whole model is read rather than patched. */
const MAX_PATCH = 5000;
/**
 * How far back each look reaches before the newest change seen: a transaction that committed after a
 * newer one (or a controller whose clock lags) records an older time. Changes seen are remembered
 * that long, so each is counted once.
 */
const LOOKBACK_MS = 10_000;
/** How often routers are told our index (upstream's rtx: 30 s; ZTC_RDM_INDEX_MS to change it, for tests). */
const INDEX_MS = Math.max(100, Number(process.env.ZTC_RDM_INDEX_MS ?? 30_000) || 30_000);
/** Change sets kept for routers that come back a little behind. */
const LOG_SIZE = 100;
/**
 * How many routers are written a full state at once, each until it has left this process (or
 * FULL_SLOT_MS). A Large model's is 4.3 MB: 500 routers subscribing at once after a restart would
 * otherwise hold 2 GB of encrypted copies in memory, waiting for their sockets.
 */
const FULL_AT_ONCE = 8;
const FULL_SLOT_MS = 30_000;

const u64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(n);
  return b;
};

export class RouterDataModelSender {
  readonly timelineId = randomUUID();
  index = 0n;
  private snapshot?: Snapshot;
  private log: { index: bigint; previousIndex: bigint; body: Buffer }[] = [];
  /** The full state at one index, encoded once for every router sent it. */
  private full?: { index: bigint; body: Buffer };
  /** A look for changes is queued and has not started: another asked for now joins it. */
  private checkQueued = false;
  /** Full states being written (at most FULL_AT_ONCE), and the routers waiting for their turn. */
  private fullWriting = 0;
  private fullWaiting: { r: RdmRouter; sub: Subscription }[] = [];
  private routers = new Map<RdmRouter, { sub?: Subscription; indexSent: bigint }>();
  private queue: Promise<unknown> = Promise.resolve();
  /** Recorded changes seen (id -> time) within LOOKBACK_MS of the newest. */
  private seen = new Map<string, string>();
  /** Set at the first look from the store's newest change (newestRouterModelChange), not this clock. */
  private newest?: string;
  private readAt = 0;
  private wholeAt = 0;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    readonly ctx: Ctx,
    readonly logger: FabricLog,
  ) {}

  start() {
    this.timers.push(setInterval(() => void this.check(), CHECK_MS), setInterval(() => this.sendIndexes(), INDEX_MS));
    for (const t of this.timers) t.unref();
  }

  stop() {
    for (const t of this.timers) clearInterval(t);
  }

  /** One at a time, in order: readings, subscriptions and what they send. */
  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.queue.then(f, f);
    this.queue = run.catch(() => {});
    return run;
  }

  /** A 2.x router connected: it is told our index from now on, and what it subscribes to. */
  add(r: RdmRouter) {
    this.routers.set(r, { indexSent: 0n });
  }

  remove(r: RdmRouter) {
    this.routers.delete(r);
  }

  /**
   * The public keys on their own, as a synthetic change set (upstream sends them after the API-session
   * sync): the router's edge listener takes SDKs from then on, before its subscription's DataState.
   */
  sendKeys(r: RdmRouter): Promise<void> {
    return this.serial(async () => {
      const s = await this.current();
      const keys = keyEvents(s);
      if (!r.closed && keys.length) r.send(CtrlType.DataStateChangeSet, encode(RdmSchemas.ChangeSet, { isSynthetic: true, changes: keys }));
    });
  }

  /** SubscribeToDataModelRequest: a new subscription (or a renewal) and what the router lacks. */
  subscribe(r: RdmRouter, req: { currentIndex?: bigint; subscriptionDurationSeconds?: number; renew?: boolean; timelineId?: string; subscriptionId?: string }): Promise<void> {
    return this.serial(async () => {
      const state = this.routers.get(r);
      if (!state || r.closed) return;
      await this.current();
      const seconds = Math.min(360, Math.max(10, Number(req.subscriptionDurationSeconds ?? 0)));
      const id = String(req.subscriptionId ?? '');
      const renewal = !!req.renew && state.sub?.id === id;
      const index = renewal ? state.sub!.index : BigInt(req.currentIndex ?? 0n);
      state.sub = { id, until: Date.now() + seconds * 1000, index };
      this.logger.info({ router: r.name, subscription: id, renew: !!req.renew, routerIndex: String(index), index: String(this.index), sameTimeline: req.timelineId === this.timelineId }, 'rdm: router subscribed to the data model');
      if (req.timelineId !== this.timelineId && !renewal) return this.sendFull(r, state.sub);
      this.catchUp(r, state.sub);
    });
  }

  /**
   * The controller's keys changed (a renewal, a replaced key withdrawn: model/pki/renewal.ts): the model
   * is read again now, and its difference (the new key created, a withdrawn one deleted) goes to every
   * subscribed router as a change set before the controller signs with the new key.
   */
  keysChanged(): Promise<void> {
    return this.serial(() => this.patch([], [])).catch((e) => this.logger.warn({ err: String(e) }, 'rdm: could not read the router data model'));
  }

  /** Look for recorded changes; read what changed when there are new ones, or it is time. */
  check(): Promise<void> {
    if (!this.routers.size || this.checkQueued) return Promise.resolve();
    this.checkQueued = true;
    return this.serial(() => {
      this.checkQueued = false;
      return this.lookForChanges();
    }).catch((e) => this.logger.warn({ err: String(e) }, 'rdm: could not read the router data model'));
  }

  /**
   * New recorded changes since the last look: the identities and policies they name are read again
   * and patched into the last reading with the small kinds (also when it is REREAD_MS old); the whole
   * model is read at first, when FULL_REREAD_MS old, when an identity's timed disable has ended, and
   * when too many changed to patch.
   */
  private async lookForChanges() {
    this.newest ??= (await newestRouterModelChange(this.ctx)) || new Date().toISOString();
    const since = new Date(Date.parse(this.newest) - LOOKBACK_MS).toISOString();
    const rows = await routerModelChanges(this.ctx, since);
    let fresh = false;
    const identities = new Set<string>();
    const policies = new Set<string>();
    for (const r of rows) {
      if (this.seen.has(r.id)) continue;
      fresh = true;
      this.seen.set(r.id, r.at);
      if (r.at > this.newest) this.newest = r.at;
      if (r.entityType === 'identities' && r.entityId) identities.add(r.entityId);
      else if (r.entityType === 'servicePolicies' && r.entityId) policies.add(r.entityId);
    }
    const horizon = new Date(Date.parse(this.newest!) - LOOKBACK_MS).toISOString();
    for (const [id, at] of this.seen) if (at < horizon) this.seen.delete(id);
    const now = Date.now();
    const whole = !this.snapshot || now - this.wholeAt >= FULL_REREAD_MS || (this.snapshot.nextEnable ?? Infinity) <= this.ctx.clock.now().getTime() || rows.length >= CHANGES_READ || identities.size > MAX_PATCH;
    if (whole) await this.reread();
    else if (fresh || now - this.readAt >= REREAD_MS) await this.patch([...identities], [...policies]);
  }

  /** The current reading, with the changes recorded up to now (what a router is sent first is up to date). */
  private async current(): Promise<Snapshot> {
    await this.lookForChanges();
    return this.snapshot!;
  }

  /** The whole model read again. */
  private async reread() {
    const whole = await readRouterDataModelWhole(this.ctx);
    this.wholeAt = Date.now();
    this.publish(wholeSnapshot(whole, publicKeys(this.ctx.pki, whole.source)));
  }

  /** These identities and policies (store ids) read again, with the small kinds, and patched into the last reading. */
  private async patch(identities: string[], policies: string[]) {
    if (!this.snapshot) return this.reread();
    const part = await readRouterDataModelPart(this.ctx, { identities, policies });
    const patched = patchSnapshot(this.snapshot, part, publicKeys(this.ctx.pki, part.source));
    if (!patched) return this.reread();
    this.publish(patched.next, patched.touched);
  }

  /** A new reading: its difference from the last, if any, goes to every subscribed router under the next index. */
  private publish(next: Snapshot, touched?: Touched) {
    this.readAt = Date.now();
    const before = this.snapshot;
    this.snapshot = next;
    if (!before) {
      // From the clock in ms: a later run's index is past an earlier one's (each change adds one), so a
      // router's index never steps back when this controller restarts (its timeline changes anyway).
      this.index = BigInt(Date.now());
      return;
    }
    const diff = changes(before, next, touched);
    if (!diff.length) return;
    const previousIndex = this.index;
    this.index++;
    const body = encode(RdmSchemas.ChangeSet, { index: this.index, previousIndex, changes: diff });
    this.log.push({ index: this.index, previousIndex, body });
    if (this.log.length > LOG_SIZE) this.log.shift();
    this.logger.debug({ index: String(this.index), changes: diff.length }, 'rdm: the router data model changed');
    for (const [r, state] of this.routers) if (state.sub) this.catchUp(r, state.sub);
  }

  /** A subscribed router gets the change sets it lacks from the log, or the whole model when the log does not reach back. */
  private catchUp(r: RdmRouter, sub: Subscription) {
    if (r.closed || sub.waitingFull || sub.until < Date.now() || sub.index === this.index) return;
    const from = this.log.findIndex((c) => c.previousIndex === sub.index);
    if (sub.index > this.index || from < 0) return this.sendFull(r, sub);
    for (const c of this.log.slice(from)) r.send(CtrlType.DataStateChangeSet, c.body, [[CtrlHeader.RouterDataModelSubscriptionId, str(sub.id)]]);
    sub.index = this.index;
  }

  /** The full state, now or at the router's turn (FULL_AT_ONCE): the latest then. */
  private sendFull(r: RdmRouter, sub: Subscription) {
    if (this.fullWriting >= FULL_AT_ONCE) {
      sub.waitingFull = true;
      this.fullWaiting.push({ r, sub });
      return;
    }
    sub.waitingFull = false;
    if (this.full?.index !== this.index) this.full = { index: this.index, body: fullState(this.snapshot!, this.index, this.timelineId) };
    r.send(CtrlType.DataState, this.full.body, [[CtrlHeader.RouterDataModelSubscriptionId, str(sub.id)]]);
    sub.index = this.index;
    this.logger.info({ router: r.name, index: String(this.index), bytes: this.full.body.length }, 'rdm: sent the router data model');
    // Its slot is free once the bytes have left (a router that reads nothing holds it FULL_SLOT_MS at most).
    this.fullWriting++;
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<void>((resolve) => (timer = setTimeout(resolve, FULL_SLOT_MS)));
    void Promise.race([r.drained?.() ?? Promise.resolve(), slow]).then(() => {
      clearTimeout(timer);
      this.fullWriting--;
      this.nextFull();
    });
  }

  /** The next router waiting for a full state, if its subscription still wants one. */
  private nextFull() {
    while (this.fullWriting < FULL_AT_ONCE && this.fullWaiting.length) {
      const { r, sub } = this.fullWaiting.shift()!;
      if (r.closed || this.routers.get(r)?.sub !== sub || sub.until < Date.now()) continue;
      this.sendFull(r, sub);
    }
  }

  /** CurrentIndexMessage: each 2.x router hears our index when it advanced since it last did. */
  sendIndexes() {
    for (const [r, state] of this.routers) {
      if (r.closed || !this.index || state.indexSent >= this.index) continue;
      r.send(CtrlType.CurrentIndexMessage, Buffer.alloc(0), [[CtrlHeader.RouterDataModelIndex, u64(this.index)]]);
      state.indexSent = this.index;
    }
  }
}
