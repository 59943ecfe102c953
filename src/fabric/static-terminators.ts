// Router-side terminators: those an administrator made (`ziti edge create terminator SVC ROUTER
// tcp:HOST:PORT`, POST /terminators), with any binding but an SDK's `edge`. The router named dials the
// address itself: upstream routers with their xgress dialer of that binding (transport, edge_transport),
// the embedded router with a TCP connection (edge/transport-egress.ts). Read from the store every second
// (they may be made on any controller sharing it), and again when a dial finds none: `ziti demo
// first-service` dials the moment it has made one.
import type { Ctx } from '../model/context.js';
import { routerSideTerminators, type RouterSideTerminator } from '../model/data-plane.js';
import type { FabricLog } from './log.js';

export const REFRESH_MS = 1000;

export interface StaticTerminator extends RouterSideTerminator {
  /** Dials sent to it, for the strategy's tie-break between equals (kept across refreshes). */
  dials: number;
}

export class StaticTerminators {
  private byId = new Map<string, StaticTerminator>();
  private byService = new Map<string, StaticTerminator[]>();
  private timer?: NodeJS.Timeout;
  private loading?: Promise<void>;
  private failing = false;

  constructor(
    readonly ctx: Ctx,
    readonly log: FabricLog,
  ) {}

  async start() {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  stop() {
    clearInterval(this.timer);
  }

  get(id: string) {
    return this.byId.get(id);
  }

  ofService(serviceId: string): StaticTerminator[] {
    return this.byService.get(serviceId) ?? [];
  }

  all(): StaticTerminator[] {
    return [...this.byId.values()];
  }

  /** Read them again (one read at a time: a call during a read waits for it and then reads once more). */
  refresh(): Promise<void> {
    const after = this.loading ?? Promise.resolve();
    const next = after.then(() => this.load());
    this.loading = next.finally(() => {
      if (this.loading === next) this.loading = undefined;
    });
    return next;
  }

  private async load() {
    let rows: RouterSideTerminator[];
    try {
      rows = await routerSideTerminators(this.ctx);
      this.failing = false;
    } catch (e) {
      if (!this.failing) this.log.warn({ err: String(e) }, 'fabric: could not read the router-side terminators');
      this.failing = true;
      return;
    }
    const byId = new Map<string, StaticTerminator>();
    const byService = new Map<string, StaticTerminator[]>();
    for (const r of rows) {
      const t: StaticTerminator = { ...r, dials: this.byId.get(r.id)?.dials ?? 0 };
      byId.set(t.id, t);
      const list = byService.get(t.serviceId);
      if (list) list.push(t);
      else byService.set(t.serviceId, [t]);
    }
    this.byId = byId;
    this.byService = byService;
  }
}
