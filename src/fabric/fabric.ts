// The data plane's live state on this controller: its router, the SDK channels, terminators and circuits,
// and the sweep that ends whatever lost its API session or service session (on any controller: the
// store is the truth, so a logout elsewhere reaches these connections within a second).
import type { Ctx } from '../model/context.js';
import { addTerminator, removeTerminators, routerAccessLost, stillLive, touchApiSessions, updateTerminator, type EdgeSession } from '../model/data-plane.js';
import { revokeRouterless } from '../model/policy/enforce.js';
import { message, str, u32, type Message } from './channel/codec.js';
import { ContentType, Header } from './channel/messages.js';
import type { Circuit, Endpoint } from './circuits.js';
import { reportDialFailure, type DialFailure } from './dial-failures.js';
import type { FabricLog } from './log.js';
import { terminatorEvent } from './events.js';
import type { CircuitRecorder } from './recorder.js';
import type { StaticTerminator, StaticTerminators } from './static-terminators.js';
import { choose, Terminators, type Terminator } from './terminators.js';

export type { FabricLog } from './log.js';

/**
 * An SDK's channel as the router's sweep sees it (edge/sdk-connection.ts is one): its API session, the
 * service sessions it carries, and how to end them. The network knows connections through this only.
 */
export interface SdkConnection {
  readonly apiSession: { id: string; identityId: string; identityName: string };
  readonly channel: { close(error?: Error): void };
  readonly closed: boolean;
  sessionIds(): string[];
  endSession(sessionId: string, reason: string): void;
}

/** How often live connections are checked against the store. */
export const SWEEP_MS = 1000;
/** How often the API sessions of live channels are marked active (upstream routers: every 60 s). */
const TOUCH_MS = 60_000;

export class Fabric {
  readonly terminators = new Terminators();
  readonly conns = new Set<SdkConnection>();
  readonly circuits = new Map<string, Circuit>();
  bytesIn = 0;
  dials = { ok: 0, failed: 0, setupMs: [] as number[] };
  private timers: NodeJS.Timeout[] = [];
  private sweeping = false;
  /** A sweep was asked for while one ran: another follows it. */
  private again = false;
  /** What identities may use changed: the next sweep also checks this router's edge-router access. */
  private routerCheck = false;

  constructor(
    readonly ctx: Ctx,
    readonly routerId: string,
    readonly log: FabricLog,
    readonly recorder?: CircuitRecorder,
    /** Router-side terminators: this router serves those made for it. */
    readonly statics?: StaticTerminators,
  ) {}

  /**
   * Where a dial that arrived here goes (the one choice, terminators.ts `choose`): among the SDKs' binds
   * on this router and the router-side terminators made for it; the latter read again once when none
   * is found (one made a moment ago). `seen`: how many the service has here, reachable or not.
   */
  async pick(serviceId: string, instanceId?: string): Promise<{ hosted?: Terminator; served?: StaticTerminator; seen: number }> {
    const look = () => {
      const served = (this.statics?.ofService(serviceId) ?? []).filter((t) => t.routerId === this.routerId);
      return choose<Terminator | StaticTerminator>([...this.terminators.ofService(serviceId), ...served], serviceId, instanceId, (t) => ('conn' in t && t.conn.closed ? undefined : 0));
    };
    let c = look();
    if (!c.best && this.statics) {
      await this.statics.refresh();
      c = look();
    }
    const t = c.best;
    return t && 'conn' in t ? { hosted: t, seen: c.seen } : { served: t, seen: c.seen };
  }

  start() {
    this.timers.push(setInterval(() => void this.sweep(), SWEEP_MS));
    this.timers.push(setInterval(() => void touchApiSessions(this.ctx, [...new Set([...this.conns].map((c) => c.apiSession.id))]).catch(() => {}), TOUCH_MS));
    for (const t of this.timers) t.unref();
  }

  stop() {
    for (const t of this.timers) clearInterval(t);
    for (const c of [...this.conns]) c.channel.close(new Error('the router is stopping'));
  }

  async addTerminator(t: Terminator) {
    await addTerminator(this.ctx, { id: t.id, serviceId: t.serviceId, routerId: this.routerId, hostId: t.hostId, instanceId: t.instanceId, cost: t.cost, precedence: t.precedence });
    this.terminators.add(t);
    terminatorEvent(this.ctx, 'created', { id: t.id, serviceId: t.serviceId, routerId: this.routerId, hostId: t.hostId });
    this.log.debug({ terminator: t.id, service: t.serviceName }, 'edge: terminator added');
  }

  /** Drop a terminator; with `tell`, its host hears why on the bind's conn id (it rebinds, as SDKs do). */
  async removeTerminator(t: Terminator, tell?: string) {
    if (!this.terminators.get(t.id)) return;
    this.terminators.delete(t);
    terminatorEvent(this.ctx, 'deleted', { id: t.id, serviceId: t.serviceId, routerId: this.routerId, hostId: t.hostId });
    if (tell && !t.conn.closed) t.conn.channel.send(message(ContentType.StateClosed, [[Header.ConnId, u32(t.bindConnId)], [Header.Seq, u32(0)]], str(tell)));
    await removeTerminators(this.ctx, [t.id]).catch((e) => this.log.warn({ err: String(e) }, 'edge: could not remove a terminator from the store'));
  }

  async terminatorChanged(t: Terminator) {
    await updateTerminator(this.ctx, t.id, { cost: t.cost, precedence: t.precedence }).catch(() => {});
  }

  circuitStarted(c: Circuit) {
    this.circuits.set(c.id, c);
    this.recorder?.added({ id: c.id, serviceId: c.serviceId, clientId: c.clientId, hostId: c.hostId, terminatorId: c.terminatorId, routerIds: [this.routerId], linkIds: [], sessionId: c.dialer.sessionId });
  }

  circuitEnded(c: Circuit) {
    if (this.circuits.delete(c.id)) this.recorder?.removed(c.id);
  }

  dialSetup(ms: number) {
    this.dials.ok++;
    if (this.dials.setupMs.length >= 1000) this.dials.setupMs.shift();
    this.dials.setupMs.push(ms);
  }

  /** The router's name, for what its failed dials say (index.ts sets it). */
  name = '';
  /**
   * Terminators of a service on other routers (upstream routers' SDKs and router-side terminators made
   * for them): what a dial that finds none here is told it cannot reach (worker.ts sets it).
   */
  elsewhere?: (serviceId: string) => { count: number; routers: string[] };

  /**
   * Dials for a service with no terminator here, routed across this router's links to another router's
   * (link/local-router.ts dialAcross; worker.ts sets it when the control channel runs).
   */
  across?: (dialer: Endpoint, s: EdgeSession, token: string, connect: Message, instanceId?: string) => Promise<{ circuit: Circuit; hostKey?: Buffer; start(): void }>;

  /** A dial here failed: counted, logged and an event (dial-failures.ts). */
  dialFailed(f: Omit<DialFailure, 'routerId' | 'routerName'>) {
    this.dials.failed++;
    reportDialFailure(this.ctx, this.log, { ...f, routerId: this.routerId, routerName: this.name || this.routerId });
  }

  /** How many of the service's terminators this router holds (an SDK's bind or one it serves), for other routers' failed dials. */
  terminatorsHere(serviceId: string): number {
    let n = 0;
    for (const t of this.terminators.ofService(serviceId)) if (!t.conn.closed) n++;
    return n + (this.statics?.ofService(serviceId).filter((t) => t.routerId === this.routerId).length ?? 0);
  }

  /** Why sessions this controller is revoking end (told to SDKs by the sweep that ends them), with when. */
  private revoked = new Map<string, { reason: string; at: number }>();

  /** Sessions about to be revoked here: their ends will say why. Kept a minute at most. */
  revoking(list: { id: string; reason: string }[]) {
    const now = Date.now();
    for (const [id, r] of this.revoked) if (now - r.at > 60_000) this.revoked.delete(id);
    for (const r of list) this.revoked.set(r.id, { reason: r.reason, at: now });
  }

  /** Access changed somewhere (access-watch.ts): look now, edge-router access included. */
  accessChanged() {
    this.routerCheck = true;
    void this.sweep();
  }

  /** Why a session ended, when it was revoked here; `fallback` otherwise. */
  private endReason(sessionId: string, fallback: string): string {
    const r = this.revoked.get(sessionId);
    return r?.reason ?? fallback;
  }

  /**
   * End what lost its API session (the whole channel) or its service session (its sides and
   * terminators), and after an access change what may no longer use this router.
   */
  async sweep() {
    if (this.sweeping) {
      this.again = true;
      return;
    }
    if (!this.conns.size && !this.terminators.size) {
      this.routerCheck = false;
      return;
    }
    this.sweeping = true;
    const routerCheck = this.routerCheck;
    this.routerCheck = false;
    try {
      // What is judged is what was looked up: a Dial or Bind (or its terminator) that arrives while the
      // lookup runs is not in it, and was ended as 'session closed' when judged against it (seen on
      // PostgreSQL, where the lookup takes longer).
      const conns = [...this.conns];
      const terminators = this.terminators.all();
      const apiSessionIds = [...new Set(conns.map((c) => c.apiSession.id))];
      const checked = new Set([...conns.flatMap((c) => c.sessionIds()), ...terminators.map((t) => t.sessionId)].filter(Boolean));
      const live = await stillLive(this.ctx, apiSessionIds, [...checked]);
      for (const c of conns) {
        if (!live.apiSessions.has(c.apiSession.id)) {
          this.log.info({ identity: c.apiSession.identityName, apiSession: c.apiSession.id }, 'edge: API session ended, closing its connection');
          c.channel.close();
          continue;
        }
        for (const id of new Set(c.sessionIds())) if (id && checked.has(id) && !live.sessions.has(id)) c.endSession(id, this.endReason(id, 'session closed'));
      }
      for (const t of terminators) if (!live.sessions.has(t.sessionId)) await this.removeTerminator(t, this.endReason(t.sessionId, 'session ended'));
      if (routerCheck) await this.checkRouterAccess(conns.filter((c) => !c.closed), terminators.filter((t) => this.terminators.get(t.id)));
    } catch (e) {
      if (routerCheck) this.routerCheck = true;
      this.log.warn({ err: String(e) }, 'edge: could not check live sessions');
    } finally {
      this.sweeping = false;
      if (this.again) {
        this.again = false;
        void this.sweep();
      }
    }
  }

  /**
   * Sessions this router carries whose identity or service an edge router policy or a service edge
   * router policy no longer lets use it: their sides and terminators here end. A session left with no
   * router at all has lost its access: it is revoked (audit, event), which ends it everywhere.
   */
  private async checkRouterAccess(conns: SdkConnection[], terminators: Terminator[]) {
    const uses = [...new Set([...conns.flatMap((c) => c.sessionIds()), ...terminators.map((t) => t.sessionId)].filter(Boolean))].map((sessionId) => ({ sessionId, routerId: this.routerId }));
    const lost = await routerAccessLost(this.ctx, uses);
    if (!lost.size) return;
    const why = 'access-lost: no edge router policy or service edge router policy lets it use this router any more';
    for (const s of lost.values()) {
      const sessionId = s.id;
      this.log.info({ session: sessionId, identity: s.identityId, service: s.serviceId, router: this.routerId }, 'edge: edge-router access lost, ending what the session carried here');
      for (const c of conns) c.endSession(sessionId, why);
      for (const t of terminators) if (t.sessionId === sessionId) await this.removeTerminator(t, why);
    }
    await revokeRouterless(this.ctx, lost.values());
  }
}
