// Circuits as the Fabric API lists them: every circuit made and ended on this controller's data plane
// (the embedded router's and upstream routers'), written to the store in batches off the dial path, so
// a dial never waits for a write and a burst of dials is one transaction; and, as they happen, their
// fabric.circuits events.
import type { Ctx } from '../model/context.js';
import { circuitGrant } from '../model/access-log.js';
import type { GrantedBy } from '../model/events/types.js';
import { recordCircuits, type CircuitRecord } from '../model/fabric-state.js';
import { circuitEvent } from './events.js';
import type { FabricLog } from './log.js';

const FLUSH_MS = 250;

export class CircuitRecorder {
  private add = new Map<string, CircuitRecord>();
  private update = new Map<string, CircuitRecord>();
  private remove = new Set<string>();
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  /** Live circuits, for the event of their end. */
  private live = new Map<string, CircuitRecord>();
  /**
   * What granted each live circuit (the access log, edge#227), read once it is made, never on the
   * dial's path: its events wait for it, in their order.
   */
  private grants = new Map<string, Promise<GrantedBy | undefined>>();

  constructor(
    readonly ctx: Ctx,
    readonly controllerId: string,
    readonly log: FabricLog,
  ) {}

  added(c: CircuitRecord, setupNs?: number) {
    this.add.set(c.id, c);
    this.live.set(c.id, c);
    if (c.sessionId && c.routerIds.length) {
      const read = circuitGrant(this.ctx, { sessionId: c.sessionId, identityId: c.clientId, serviceId: c.serviceId, routerId: c.routerIds[0] }).catch((e) => {
        this.log.debug({ err: String(e) }, 'fabric: could not read what granted a circuit');
        return undefined;
      });
      this.grants.set(c.id, read);
    }
    this.event('created', c, setupNs);
    this.schedule();
  }

  private event(type: 'created' | 'pathUpdated' | 'deleted', c: CircuitRecord, setupNs?: number) {
    const emit = (grantedBy?: GrantedBy) =>
      circuitEvent(this.ctx, type, { id: c.id, clientId: c.clientId, serviceId: c.serviceId, terminatorId: c.terminatorId, routers: c.routerIds, links: c.linkIds, setupNs, sessionId: c.sessionId, grantedBy });
    const grant = this.grants.get(c.id);
    if (!grant) return emit();
    void grant.then(emit);
    if (type === 'deleted') this.grants.delete(c.id);
  }

  updated(moved: CircuitRecord) {
    // The same circuit on another path: still the session that dialed it.
    const c = { ...moved, sessionId: moved.sessionId ?? this.live.get(moved.id)?.sessionId };
    this.live.set(c.id, c);
    this.event('pathUpdated', c);
    // Not written yet: the insert carries the new path.
    if (this.add.has(c.id)) this.add.set(c.id, c);
    else this.update.set(c.id, c);
    this.schedule();
  }

  removed(id: string) {
    const c = this.live.get(id);
    if (c) this.event('deleted', c);
    this.grants.delete(id);
    this.live.delete(id);
    this.update.delete(id);
    // Made and ended within one batch: never written.
    if (!this.add.delete(id)) this.remove.add(id);
    this.schedule();
  }

  private schedule() {
    if (this.timer) return;
    this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  async flush() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    const added = [...this.add.values()];
    const updated = [...this.update.values()];
    const removed = [...this.remove];
    this.add.clear();
    this.update.clear();
    this.remove.clear();
    if (!added.length && !updated.length && !removed.length) return;
    this.flushing = recordCircuits(this.ctx, this.controllerId, added, updated, removed).catch((e) => this.log.warn({ err: String(e) }, 'fabric: could not record circuits'));
    await this.flushing;
  }
}
