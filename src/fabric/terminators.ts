// The live terminators of this router: where a service's dials go. Each is one SDK's Bind on one edge
// channel; the store keeps a copy for /terminators (model/data-plane.ts), this registry is what dials read.
// And the terminator choice every router's dials make (`choose`), over these, router-side terminators
// (static-terminators.ts) and those of upstream routers (ctrl/network.ts).
import type { Circuit, SideConn } from './circuits.js';
import type { Message } from './channel/codec.js';

/**
 * The channel a terminator was bound on (edge/sdk-connection.ts): a side of circuits, whether it is gone,
 * and how to dial its host for a circuit (the router's dials and its links call it).
 */
export interface BindingConn extends SideConn {
  readonly closed: boolean;
  dialHost(t: Terminator, circuit: Circuit, connect: Message, callerId: string): Promise<void>;
}

export type Precedence = 'default' | 'required' | 'failed';

export interface Terminator {
  id: string;
  serviceId: string;
  serviceName: string;
  hostId: string;
  /** Header 1006: an addressable instance of the service ("" when none). */
  instanceId: string;
  cost: number;
  precedence: Precedence;
  /** The binding: which channel, which conn id, which Bind session token. */
  conn: BindingConn;
  bindConnId: number;
  token: string;
  sessionId: string;
  apiSessionId: string;
  /** The host's public key (header 1003), handed to each dialer for end-to-end encryption. */
  hostKey?: Buffer;
  /** The Bind asked for router-assigned conn ids (header 1012): Go SDK and C SDK 1.x. */
  assignIds: boolean;
  listenerId?: string;
  /** Dials sent to it, for the strategy's tie-break between equals. */
  dials: number;
}

const RANK: Record<Precedence, number> = { required: 0, default: 1, failed: 2 };

/** What ranks a terminator for a dial: its precedence, its cost (with the path's, across routers), its dials so far. */
export interface Ranked {
  precedence: Precedence;
  cost: number;
  dials: number;
}

/**
 * Whether `a` is a better place for a dial than `b` (upstream's smartrouting, without its dynamic
 * costs): the best precedence, then the lowest cost, then the fewest dials (spreads load over equals).
 */
export function better(a: Ranked, b: Ranked | undefined): boolean {
  if (!b) return true;
  if (RANK[a.precedence] !== RANK[b.precedence]) return RANK[a.precedence] < RANK[b.precedence];
  if (a.cost !== b.cost) return a.cost < b.cost;
  return a.dials < b.dials;
}

/** What a dial may go to, on any router: ranked by `better`, filtered by service and instance. */
export interface Candidate extends Ranked {
  id: string;
  serviceId: string;
  instanceId: string;
}

/**
 * The terminator choice, one for every router (the embedded router's dials and the circuits upstream
 * routers ask for): among the service's `candidates` (of `instanceId` when the dialer named one), those
 * `reach` says can be reached, at the cost it gives (the path's, added to the terminator's own), the
 * `better` one. `seen` counts the service's candidates whether reachable or not, for the error.
 */
export function choose<T extends Candidate>(candidates: Iterable<T>, serviceId: string, instanceId: string | undefined, reach: (t: T) => number | undefined): { best?: T; cost: number; seen: number } {
  let best: { t: T; rank: Ranked } | undefined;
  let seen = 0;
  for (const t of candidates) {
    if (t.serviceId !== serviceId || (instanceId && t.instanceId !== instanceId)) continue;
    seen++;
    const cost = reach(t);
    if (cost === undefined) continue;
    const rank = { precedence: t.precedence, cost: t.cost + cost, dials: t.dials };
    if (better(rank, best?.rank)) best = { t, rank };
  }
  return { best: best?.t, cost: best?.rank.cost ?? 0, seen };
}

export class Terminators {
  private byId = new Map<string, Terminator>();
  private byService = new Map<string, Set<Terminator>>();

  get size() {
    return this.byId.size;
  }

  all(): Terminator[] {
    return [...this.byId.values()];
  }

  get(id: string) {
    return this.byId.get(id);
  }

  add(t: Terminator) {
    this.byId.set(t.id, t);
    let set = this.byService.get(t.serviceId);
    if (!set) this.byService.set(t.serviceId, (set = new Set()));
    set.add(t);
  }

  delete(t: Terminator) {
    this.byId.delete(t.id);
    const set = this.byService.get(t.serviceId);
    set?.delete(t);
    if (set && !set.size) this.byService.delete(t.serviceId);
  }

  /** Terminators of one binding: a channel's Bind conn id, and optionally its token. */
  ofBinding(conn: BindingConn, bindConnId: number, token?: string): Terminator[] {
    return this.all().filter((t) => t.conn === conn && t.bindConnId === bindConnId && (token === undefined || t.token === token));
  }

  ofConn(conn: BindingConn): Terminator[] {
    return this.all().filter((t) => t.conn === conn);
  }

  /** The service's terminators (for `choose`). */
  ofService(serviceId: string): Iterable<Terminator> {
    return this.byService.get(serviceId) ?? [];
  }
}
