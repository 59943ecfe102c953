// The network of upstream routers as this controller drives it (ctrl-channel-1.1.md sections 2.5-2.7,
// 4.2): terminators on any router, the links routers report between them, and circuits routed across
// them: the cheapest path from the router a dial arrives at to a router hosting the service, a Route to
// every router on it, and a new path for circuits whose link fails.
import { randomUUID } from 'node:crypto';
import { putLink, removeLinks, routerCosts, setLinkLatency, storedLinkIds, type RouterCosts } from '../../model/fabric-state.js';
import { addTerminator, removeTerminators, storedEdgeTerminators, storedRouterTerminators, updateTerminator, type SessionUse, type StoredRouterTerminator } from '../../model/data-plane.js';
import type { Ctx } from '../../model/context.js';
import type { Message } from '../channel/codec.js';
import { EdgeError } from '../channel/messages.js';
import type { FabricLog } from '../fabric.js';
import { linkEvent, terminatorEvent } from '../events.js';
import type { CircuitRecorder } from '../recorder.js';
import { ROUTE_ERROR_CAUSES } from '../dial-failures.js';
import { Refused } from '../session-checks.js';
import type { StaticTerminator, StaticTerminators } from '../static-terminators.js';
import { choose, type Precedence } from '../terminators.js';
import { CtrlHeader } from './messages.js';
import { cheapestPaths, routeSteps, type Path, type PathLink, type RouteStep } from './paths.js';

/** How long routers have to build a route (upstream's routeTimeout), and how many tries a circuit gets. */
export const ROUTE_TIMEOUT_MS = 10_000;
const ATTEMPTS = 2;
/** The attempt number upstream gives Route messages that move an existing circuit to a new path. */
const REROUTE_ATTEMPT = 99969996;
const PUBLIC_KEY = 1003;
/** RouteResult error code (header 1104): the egress router has no such terminator. */
const ROUTE_ERROR_INVALID_TERMINATOR = 1;
/** How many ended circuits are remembered (endedLately): a few seconds of dials on a busy router. */
const ENDED_KEPT = 4096;

export interface UpstreamTerminator {
  id: string;
  /**
   * The router's xgress that reaches it: `edge` (an SDK's Bind, the default) or `tunnel` (the router's own
   * tunneler hosting a service, ctrl/tunnel/; its key comes from the egress's RouteResult, as a router-side
   * terminator's does).
   */
  binding?: 'edge' | 'tunnel';
  /** Where the egress router finds it: the id (V2), or `hosted:<bind token>` (the legacy form). */
  address: string;
  routerId: string;
  serviceId: string;
  hostId: string;
  instanceId: string;
  cost: number;
  precedence: Precedence;
  sessionId: string;
  /** The API session of the Bind: what a 1.x router must drop to end a JWT session's use (see EndedUse). */
  apiSessionId: string;
  token: string;
  peerData: Map<number, Buffer>;
  dials: number;
}

export interface Link extends PathLink {
  protocol: string;
  dialAddress: string;
  iteration: number;
  /** 1 unless an admin says otherwise; `cost` adds each end's measured latency in ms, as upstream. */
  staticCost: number;
  srcLatencyNs: number;
  dstLatencyNs: number;
}

/** Where a circuit of upstream routers ends: an SDK's Bind on a router, or a router-side terminator. */
export type CircuitEnd = UpstreamTerminator | StaticTerminator;

export interface UpstreamCircuit {
  id: string;
  serviceId: string;
  clientId: string;
  terminator: CircuitEnd;
  sessionId: string;
  apiSessionId: string;
  token: string;
  ingressId: string;
  egressId: string;
  path: Path;
}

export interface CircuitRequest {
  serviceId: string;
  serviceName: string;
  clientId: string;
  clientName?: string;
  sessionId: string;
  apiSessionId: string;
  token: string;
  instanceId?: string;
  encryptionRequired: boolean;
  peerData: Map<number, Buffer>;
  /** The circuit's id when the dialing router chose it (2.1's CreateCircuitV3 may): else a new one. */
  circuitId?: string;
}

/** A session's use on a router that ended: the router must drop it (ctrl/listener.ts tells it how). */
export interface EndedUse {
  routerId: string;
  sessionId: string;
  apiSessionId: string;
  token: string;
}

export interface RoutedCircuit {
  circuit: UpstreamCircuit;
  /** The host's stored peer data overlaid with what the egress reported back from its SDK. */
  peerData: Map<number, Buffer>;
  tags: Record<string, string>;
}

/**
 * A router circuits are routed over: an upstream router on the control channel (router-connection.ts),
 * or ztc's own router (link/local-router.ts), told its part of a path in-process.
 */
export interface PathMember {
  readonly routerId: string;
  readonly name: string;
  route(circuitId: string, attempt: number, step: RouteStep, tags: Record<string, string>, timeoutMs: number): Promise<Message | undefined>;
  unroute(circuitId: string, now?: boolean): void;
}

/** ztc's own router: a member of every path search, whose SDKs' terminators are ranked with the others. */
export interface LocalMember extends PathMember {
  terminators(serviceId: string): UpstreamTerminator[];
}

export class RouterNetwork {
  readonly terminators = new Map<string, UpstreamTerminator>();
  readonly links = new Map<string, Link>();
  readonly circuits = new Map<string, UpstreamCircuit>();
  /**
   * The ids of the circuits ended last (oldest first, ENDED_KEPT of them): both ends of a circuit on one
   * router send a Fault when they close, and the second finds the circuit gone; its routers were told
   * already (endCircuit), so it needs no Unroute of its own (fault.ts).
   */
  private readonly ended = new Set<string>();
  private costs = new Map<string, RouterCosts>();

  constructor(
    readonly ctx: Ctx,
    readonly controllerId: string,
    /** The routers connected here, known through what a path needs of them (router-connection.ts is one). */
    readonly routers: ReadonlyMap<string, PathMember>,
    readonly recorder: CircuitRecorder,
    readonly log: FabricLog,
    /** Router-side terminators: those made for an upstream router are dialed by it (its binding's xgress). */
    readonly statics?: StaticTerminators,
  ) {}

  /** Router costs are read when a router connects and refreshed with its lease (an admin may change them). */
  async refreshCosts() {
    this.costs = await routerCosts(this.ctx, this.memberIds());
  }

  /** ztc's own router, when it runs beside the control channel (worker.ts): it links with the others. */
  local?: LocalMember;

  /** Every router a path may use: those connected, and ztc's own. */
  private memberIds(): string[] {
    return this.local ? [...this.routers.keys(), this.local.routerId] : [...this.routers.keys()];
  }

  private at(routerId: string): PathMember | undefined {
    return this.routers.get(routerId) ?? (this.local?.routerId === routerId ? this.local : undefined);
  }

  private nameOf(routerId: string): string {
    return this.at(routerId)?.name ?? routerId;
  }

  // ---- terminators

  /**
   * A Bind's terminator, from any router. A router that reconnects sends its terminators again with the
   * same ids, also to a controller that restarted (or crashed) and so holds their rows but not them.
   */
  async addTerminator(t: UpstreamTerminator) {
    // The store shows the id as address: a legacy address holds the Bind token, which never leaves memory.
    await addTerminator(this.ctx, { id: t.id, binding: t.binding, serviceId: t.serviceId, routerId: t.routerId, hostId: t.hostId, instanceId: t.instanceId, cost: t.cost, precedence: t.precedence, sessionId: t.sessionId, peerData: t.peerData }, { replace: true });
    this.terminators.set(t.id, t);
    terminatorEvent(this.ctx, 'created', t);
  }

  /** Routers whose stored terminators are being read (restore): a dial waits for them. */
  private restoring = new Map<string, Promise<unknown>>();

  /**
   * A router connected: the terminators kept for it are its again. Those of a previous run of the
   * controller (in the store, not here) are read back; those whose Bind session ended are dropped.
   * Routable at once, as upstream keeps them; returns every one the router should still hold, for it
   * to confirm (ValidateTerminatorsV2, router-connection.ts validateTerminators).
   */
  async restore(routerId: string): Promise<UpstreamTerminator[]> {
    const work = (async () => {
      const stored = await storedRouterTerminators(this.ctx, routerId);
      const ended: string[] = [];
      for (const r of stored) {
        if (this.terminators.has(r.id)) continue;
        if (!r.session) {
          ended.push(r.id);
          continue;
        }
        this.terminators.set(r.id, this.fromStore({ ...r, session: r.session }));
      }
      if (ended.length) await removeTerminators(this.ctx, ended);
      return [...this.terminators.values()].filter((t) => t.routerId === routerId);
    })();
    this.restoring.set(routerId, work);
    try {
      return await work;
    } finally {
      if (this.restoring.get(routerId) === work) this.restoring.delete(routerId);
    }
  }

  /**
   * Several controllers on one database (PostgreSQL): a router that lists each of them in its
   * ctrl.endpoints makes, changes and removes its terminators through whichever it finds most responsive,
   * and asks any of them for a circuit. So before a terminator is chosen or changed here, what the store
   * holds for it is taken: terminators made through another controller on routers connected here are
   * adopted (the Bind session's token read back, as after a restart), costs and precedences changed there
   * are followed, and those removed there are forgotten. One indexed read per dial; on SQLite, where one
   * controller holds the database, memory is the store and nothing is read.
   */
  async adoptStored(where: { serviceId?: string; ids?: string[] }) {
    if (this.ctx.store.dialect.name !== 'postgres') return;
    const matches = (t: UpstreamTerminator) => (where.serviceId ? t.serviceId === where.serviceId : where.ids!.includes(t.id));
    // Those held before the read: one added here while it ran is in the store already, or not yet here.
    const before = [...this.terminators.values()].filter(matches).map((t) => t.id);
    const stored = await storedEdgeTerminators(this.ctx, { ...where, anyBinding: true });
    const inStore = new Set(stored.map((r) => r.id));
    // Live ones on routers this controller does not hold: a dial that finds no other says so (choose).
    if (where.serviceId) {
      const names = (list: StoredRouterTerminator[]) => [...new Set(list.map((r) => r.routerName))];
      this.elsewhere.set(where.serviceId, {
        // Upstream routers not connected here (with a live Bind session), and other controllers' own routers.
        routers: names(stored.filter((r) => !r.embeddedOf && r.session && !this.routers.has(r.routerId))),
        embedded: names(stored.filter((r) => r.embeddedOf && r.routerId !== this.local?.routerId)),
      });
    }
    for (const id of before) if (!inStore.has(id)) this.terminators.delete(id);
    for (const r of stored) {
      const known = this.terminators.get(r.id);
      if (known) {
        known.cost = r.cost;
        known.precedence = r.precedence;
      } else if ((r.binding === 'edge' || r.binding === 'tunnel') && r.session && this.routers.has(r.routerId)) this.terminators.set(r.id, this.fromStore({ ...r, session: r.session }));
    }
  }

  /** Per service, at its last dial: the routers not connected here that hold its terminators (adoptStored). */
  private elsewhere = new Map<string, { routers: string[]; embedded: string[] }>();

  private fromStore(r: StoredRouterTerminator & { session: NonNullable<StoredRouterTerminator['session']> }): UpstreamTerminator {
    // A router's tunneler knows its sessions by their ids (ctrl/tunnel/common.ts), an SDK by their tokens.
    const tunnel = r.binding === 'tunnel';
    return { id: r.id, binding: tunnel ? 'tunnel' : 'edge', address: r.id, routerId: r.routerId, serviceId: r.serviceId, hostId: r.hostId, instanceId: r.instanceId, cost: r.cost, precedence: r.precedence, sessionId: r.session.id, apiSessionId: r.session.apiSessionId, token: tunnel ? r.session.id : r.session.token, peerData: r.peerData, dials: 0 };
  }

  async removeTerminators(ids: string[]) {
    const gone = ids.filter((id) => {
      const t = this.terminators.get(id);
      if (t) terminatorEvent(this.ctx, 'deleted', t);
      return this.terminators.delete(id);
    });
    await removeTerminators(this.ctx, gone).catch(() => {});
    return gone;
  }

  /** An SDK's UpdateBind: the terminator's cost or precedence, here and in the store. */
  async updateTerminator(id: string, o: { cost?: number; precedence?: Precedence }) {
    const t = this.terminators.get(id);
    if (!t) return;
    if (o.cost !== undefined) t.cost = o.cost;
    if (o.precedence) t.precedence = o.precedence;
    await updateTerminator(this.ctx, id, { cost: t.cost, precedence: t.precedence });
  }

  terminatorsOf(routerId: string): string[] {
    return [...this.terminators.values()].filter((t) => t.routerId === routerId).map((t) => t.id);
  }

  // ---- links

  async linkReported(l: Link) {
    const known = this.links.get(l.id);
    if (known && known.iteration > l.iteration) return;
    this.links.set(l.id, l);
    linkEvent(this.ctx, 'connected', l);
    await this.recordLink(l);
  }

  private recordLink(l: Link) {
    return putLink(this.ctx, this.controllerId, { id: l.id, srcRouterId: l.src, dstRouterId: l.dst, protocol: l.protocol, dialAddress: l.dialAddress, iteration: l.iteration, staticCost: l.staticCost }).catch((e) =>
      this.log.warn({ err: String(e) }, 'ctrl: could not record a link'),
    );
  }

  /**
   * Several controllers on one database (PostgreSQL): a router connected to each reports its links to
   * each, and the store keeps one row per link, naming the controller that wrote it last. That one
   * removes the row when the router leaves it (or it stops, or starts again) while the link is still up
   * and known to the others: each second they put back the rows of the links they hold, which is what
   * `ztc fabric links` and the policy advisor read. A link that fails is reported to every controller.
   */
  async keepLinkRows() {
    if (this.ctx.store.dialect.name !== 'postgres' || !this.links.size) return;
    const stored = await storedLinkIds(this.ctx, [...this.links.keys()]);
    for (const l of [...this.links.values()]) if (!stored.has(l.id) && this.links.get(l.id) === l) await this.recordLink(l);
  }

  linksOf(routerId: string): Link[] {
    return [...this.links.values()].filter((l) => l.src === routerId || l.dst === routerId);
  }

  /** A router's measured latency over one of its links (its metrics): the link's cost follows. */
  async linkLatency(l: Link, routerId: string, ns: number) {
    const end = l.src === routerId ? 'src' : 'dst';
    if (end === 'src') l.srcLatencyNs = ns;
    else l.dstLatencyNs = ns;
    l.cost = l.staticCost + Math.floor(l.srcLatencyNs / 1e6) + Math.floor(l.dstLatencyNs / 1e6);
    await setLinkLatency(this.ctx, l.id, end, ns).catch(() => {});
  }

  /** A link failed or lost a duplicate race: forget it and move the circuits that crossed it. */
  async linkGone(id: string, iteration?: number, duplicate = false) {
    const l = this.links.get(id);
    if (!l || (iteration !== undefined && iteration < l.iteration)) return;
    this.links.delete(id);
    linkEvent(this.ctx, duplicate ? 'duplicate' : 'fault', l);
    await removeLinks(this.ctx, [id]).catch(() => {});
    await this.rerouteWhere((c) => c.path.links.includes(id));
  }

  // ---- routers

  /**
   * A router's connection ended: the links it dialed go; circuits it carried end or move. Its
   * terminators stay (unreachable while it is away): a router that reconnects still holds them, and
   * confirms which when it is back (restore), as upstream keeps and validates them.
   */
  async routerGone(routerId: string) {
    const dialed = [...this.links.values()].filter((l) => l.src === routerId).map((l) => l.id);
    for (const id of dialed) {
      linkEvent(this.ctx, 'removed', this.links.get(id)!);
      this.links.delete(id);
    }
    await removeLinks(this.ctx, dialed).catch(() => {});
    this.costs.delete(routerId);
    for (const c of [...this.circuits.values()]) {
      const i = c.path.routers.indexOf(routerId);
      // Its ends were on that router: nothing can carry it now.
      if (i === 0 || i === c.path.routers.length - 1) this.endCircuit(c, true);
    }
    await this.rerouteWhere((c) => c.path.routers.includes(routerId));
  }

  // ---- circuits

  /**
   * Route a circuit from `from` (the router the dial arrived at) to the best terminator of the service
   * reachable from there: Route to every router of the path, all RouteResults successful for the
   * attempt, else Unroute what was built and try again.
   */
  async createCircuit(from: { routerId: string }, r: CircuitRequest): Promise<RoutedCircuit> {
    try {
      return await this.routeToTerminator(from, r);
    } catch (e) {
      // A refusal names who dialed what (dial-failures.ts).
      if (e instanceof Refused && !e.who) e.who = { serviceId: r.serviceId, serviceName: r.serviceName, identityId: r.clientId, identityName: r.clientName ?? r.clientId };
      throw e;
    }
  }


  private async routeToTerminator(from: { routerId: string }, r: CircuitRequest): Promise<RoutedCircuit> {
    if (!this.costs.has(from.routerId)) await this.refreshCosts();
    // A router that just connected: its kept terminators are read back before any is chosen.
    if (this.restoring.size) await Promise.all([...this.restoring.values()].map((p) => p.catch(() => {})));
    await this.adoptStored({ serviceId: r.serviceId });
    let why = '';
    let cause = 'ROUTER_ERR_GENERIC';
    // One circuit id for every attempt (routers tell attempts apart by number); each path its own addresses.
    const id = r.circuitId ?? randomUUID();
    if (r.circuitId !== undefined && (!/^[\w.:@-]{1,64}$/.test(id) || this.circuits.has(id))) throw new Refused(`the circuit id '${id.slice(0, 64)}' the router chose is ${this.circuits.has(id) ? 'in use' : 'not valid'}`, EdgeError.Internal);
    const started = performance.now();
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      let choice = this.choose(from.routerId, r);
      // None: perhaps a router-side terminator made a moment ago.
      if (!choice.terminator && this.statics) {
        await this.statics.refresh();
        choice = this.choose(from.routerId, r);
      }
      const t = choice.terminator;
      if (!t) throw new Refused(choice.why, EdgeError.InvalidTerminator, choice.cause);
      const hosted = 'peerData' in t;
      // An SDK's terminator gave its key when it bound; a router-side one's egress router gives its own in
      // its RouteResult (edge_transport), as a router's tunneler does (tunnel), or none (checked below).
      if (r.encryptionRequired && hosted && t.binding !== 'tunnel' && !t.peerData.has(PUBLIC_KEY)) throw new Refused('encryption required on service, terminator did not send public header', EdgeError.EncryptionDataMissing);
      t.dials++;
      const circuit: UpstreamCircuit = { id, serviceId: r.serviceId, clientId: r.clientId, terminator: t, sessionId: r.sessionId, apiSessionId: r.apiSessionId, token: r.token, ingressId: randomUUID(), egressId: randomUUID(), path: choice.path! };
      const hostId = hosted ? t.hostId : '';
      const tags = { serviceId: r.serviceId, clientId: r.clientId, hostId };
      // The egress router's xgress of the terminator's binding dials its address (edge: the SDK's terminator id).
      const steps = routeSteps(circuit.path, circuit.ingressId, circuit.egressId, { binding: hosted ? (t.binding ?? 'edge') : t.binding, address: circuit.egressId, destination: t.address, peerData: r.peerData });
      const results = await Promise.all(steps.map((s) => this.at(s.routerId)?.route(circuit.id, attempt, s, tags, ROUTE_TIMEOUT_MS) ?? Promise.resolve(undefined)));
      const failed = results.findIndex((m) => !m?.headers.has(CtrlHeader.RouteSuccess));
      if (failed < 0) {
        // The egress's RouteResult carries what the hosting SDK answered (its own key among it), or the
        // key of the egress router itself when it ends the encryption (edge_transport).
        const peerData = new Map(hosted ? t.peerData : []);
        for (const [k, v] of results[results.length - 1]!.headers) if (k >= 1000 && !(k >= 1101 && k <= 1113)) peerData.set(k, v);
        if (r.encryptionRequired && !peerData.has(PUBLIC_KEY)) {
          for (const s of steps) this.at(s.routerId)?.unroute(circuit.id);
          throw new Refused('encryption required on service, terminator did not send public header', EdgeError.EncryptionDataMissing);
        }
        this.circuits.set(circuit.id, circuit);
        this.recorder.added({ id: circuit.id, serviceId: r.serviceId, clientId: r.clientId, hostId, terminatorId: t.id, routerIds: circuit.path.routers, linkIds: circuit.path.links, sessionId: r.sessionId }, (performance.now() - started) * 1e6);
        return { circuit, peerData, tags };
      }
      const m = results[failed];
      why = m?.headers.get(CtrlHeader.RouteError)?.toString('utf8') ?? `router '${this.nameOf(steps[failed].routerId)}' gave no route result within ${ROUTE_TIMEOUT_MS / 1000} s`;
      const code = m?.headers.get(CtrlHeader.RouteErrorCode)?.[0];
      cause = !m ? 'ROUTER_RESPONSE_TIMEOUT' : code !== undefined ? (ROUTE_ERROR_CAUSES[code] ?? 'ROUTER_ERR_GENERIC') : 'ROUTER_ERR_GENERIC';
      // The egress does not know the terminator (its host left while the controller was away): it goes, as upstream deletes it.
      if (hosted && failed === steps.length - 1 && m?.headers.get(CtrlHeader.RouteErrorCode)?.[0] === ROUTE_ERROR_INVALID_TERMINATOR) {
        this.log.info({ terminator: t.id, router: this.nameOf(t.routerId), reason: why }, 'ctrl: the router no longer holds a terminator: removed');
        await this.removeTerminators([t.id]);
      }
      // What the routers that succeeded built for this attempt is abandoned.
      steps.forEach((s, i) => results[i]?.headers.has(CtrlHeader.RouteSuccess) && this.at(s.routerId)?.unroute(circuit.id));
      this.log.info({ circuit: circuit.id, attempt, reason: why }, 'ctrl: a route attempt failed');
    }
    throw new Refused(`failed to establish connection with the service's terminator: ${why}`, EdgeError.InvalidTerminator, cause);
  }

  /**
   * The best terminator for the request and the path to it (terminators.ts `choose`, the path's cost
   * added): SDKs' terminators on upstream routers and on ztc's own, router-side terminators made for
   * upstream routers.
   */
  private choose(fromId: string, r: CircuitRequest): { terminator?: CircuitEnd; path?: Path; why: string; cause?: string } {
    const routers = new Map(this.memberIds().map((id) => [id, this.costs.get(id) ?? { cost: 0, noTraversal: false }]));
    const pathTo = cheapestPaths(fromId, routers, this.links.values());
    const paths = new Map<string, Path | undefined>();
    const path = (routerId: string) => (paths.has(routerId) ? paths.get(routerId) : paths.set(routerId, pathTo(routerId)).get(routerId));
    const served = (this.statics?.ofService(r.serviceId) ?? []).filter((t) => this.routers.has(t.routerId));
    const local = this.local?.terminators(r.serviceId) ?? [];
    const c = choose<CircuitEnd>([...this.terminators.values(), ...local, ...served], r.serviceId, r.instanceId, (t) => path(t.routerId)?.cost);
    if (c.best) return { terminator: c.best, path: path(c.best.routerId), why: '' };
    const from = this.nameOf(fromId);
    const of = r.instanceId ? ` for instance '${r.instanceId}'` : '';
    if (c.seen) return { why: `service '${r.serviceName}' has ${c.seen} terminator(s)${of}, none on a router reachable from router '${from}': no chain of links joins them (see ztc fabric links)`, cause: 'NO_PATH' };
    const elsewhere = this.elsewhere.get(r.serviceId) ?? { routers: [], embedded: [] };
    const named = (list: string[]) => list.map((n) => `'${n}'`).join(', ');
    if (elsewhere.routers.length)
      return {
        why: `service '${r.serviceName}' has terminators only on router(s) not connected to this controller (${named(elsewhere.routers)}): with several controllers on one database, list every controller in each router's ctrl.endpoints (docs/postgresql.md)`,
        cause: 'NO_PATH',
      };
    if (elsewhere.embedded.length)
      return {
        why: `service '${r.serviceName}' has terminators only on the embedded router of another controller (${named(elsewhere.embedded)}), which this controller does not route to: dial through that router, or host the service on an upstream router that lists every controller in its ctrl.endpoints (docs/postgresql.md)`,
        cause: 'NO_PATH',
      };
    return { why: `service '${r.serviceName}' has no terminators${of}: no host has bound it (on any router) and no router-side terminator names it`, cause: 'NO_TERMINATORS' };
  }

  /** The service's terminators on upstream routers (connected or not) and router-side ones made for them, for the embedded router's failed dials. */
  terminatorsOfService(serviceId: string, embeddedId?: string): { count: number; routers: string[] } {
    const routerIds = new Set<string>();
    let count = 0;
    for (const t of this.terminators.values()) if (t.serviceId === serviceId) (count++, routerIds.add(t.routerId));
    for (const t of this.statics?.ofService(serviceId) ?? []) if (t.routerId !== embeddedId) (count++, routerIds.add(t.routerId));
    return { count, routers: [...routerIds].map((id) => this.nameOf(id)) };
  }

  /** A circuit ended: forget it and tell every router on its path to drop its forwarding (`now`: at once). */
  endCircuit(c: UpstreamCircuit, now: boolean) {
    if (!this.circuits.delete(c.id)) return;
    this.ended.add(c.id);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.values().next().value!);
    this.recorder.removed(c.id);
    for (const id of c.path.routers) this.at(id)?.unroute(c.id, now);
  }

  /** Whether this controller ended the circuit lately (and told its routers to drop it then). */
  endedLately(circuitId: string): boolean {
    return this.ended.has(circuitId);
  }

  /** Circuits matching `which` get a new path between the same ends; those that cannot are ended. */
  private async rerouteWhere(which: (c: UpstreamCircuit) => boolean) {
    const moving = [...this.circuits.values()].filter(which);
    if (!moving.length) return;
    await this.refreshCosts();
    const routers = new Map(this.memberIds().map((id) => [id, this.costs.get(id) ?? { cost: 0, noTraversal: false }]));
    await Promise.all(
      moving.map(async (c) => {
        const path = cheapestPaths(c.path.routers[0], routers, this.links.values())(c.path.routers[c.path.routers.length - 1]);
        if (!path) {
          this.log.info({ circuit: c.id }, 'ctrl: no path left for a circuit: ending it');
          return this.endCircuit(c, true);
        }
        c.path = path;
        const tags = { serviceId: c.serviceId, clientId: c.clientId, hostId: 'hostId' in c.terminator ? c.terminator.hostId : '' };
        const results = await Promise.all(routeSteps(path, c.ingressId, c.egressId).map((s) => this.at(s.routerId)?.route(c.id, REROUTE_ATTEMPT, s, tags, ROUTE_TIMEOUT_MS)));
        if (results.some((m: Message | undefined) => !m?.headers.has(CtrlHeader.RouteSuccess))) return this.endCircuit(c, true);
        this.recorder.updated({ id: c.id, serviceId: c.serviceId, clientId: c.clientId, hostId: tags.hostId, terminatorId: c.terminator.id, routerIds: path.routers, linkIds: path.links });
        this.log.info({ circuit: c.id, routers: path.routers.length }, 'ctrl: rerouted a circuit');
      }),
    );
  }

  /** Service sessions that ended: their terminators and circuits go; what each router must drop is returned. */
  async sessionsEnded(ended: Set<string>): Promise<EndedUse[]> {
    return this.endUses((sessionId) => ended.has(sessionId));
  }

  /** End the terminators and circuits whose (session, router) `ends` picks; each use as the router knows it. */
  private async endUses(ends: (sessionId: string, routerId: string) => boolean): Promise<EndedUse[]> {
    const uses: EndedUse[] = [];
    const gone: string[] = [];
    for (const t of this.terminators.values()) {
      if (!ends(t.sessionId, t.routerId)) continue;
      uses.push({ routerId: t.routerId, sessionId: t.sessionId, apiSessionId: t.apiSessionId, token: t.token });
      gone.push(t.id);
    }
    for (const c of [...this.circuits.values()]) {
      if (!ends(c.sessionId, c.path.routers[0])) continue;
      uses.push({ routerId: c.path.routers[0], sessionId: c.sessionId, apiSessionId: c.apiSessionId, token: c.token });
      this.endCircuit(c, true);
    }
    await this.removeTerminators(gone);
    return uses;
  }

  /** Where each session is used: a dial's circuit at its ingress router, a terminator at its router. */
  sessionUses(): SessionUse[] {
    return [
      ...[...this.terminators.values()].map((t) => ({ sessionId: t.sessionId, routerId: t.routerId })),
      ...[...this.circuits.values()].map((c) => ({ sessionId: c.sessionId, routerId: c.path.routers[0] })),
    ];
  }

  /**
   * Uses (`session|router`) that lost their router: those circuits end and those terminators go; only
   * that router is to drop them (the session may still be good on other routers).
   */
  async usesEnded(lost: Set<string>): Promise<EndedUse[]> {
    return this.endUses((sessionId, routerId) => lost.has(`${sessionId}|${routerId}`));
  }

  sessionIds(): string[] {
    return [...[...this.terminators.values()].map((t) => t.sessionId), ...[...this.circuits.values()].map((c) => c.sessionId)];
  }
}
