// Health checks for systemd, Kubernetes probes and load balancers, in the shape upstream's controller
// answers at /health-checks: {data: {healthy, checks: [{id, healthy, lastCheckTime, lastCheckDuration,
// details?}]}, meta: {}}, `?type=short` for ids and verdicts only. Unauthenticated, cheap (the store
// is asked at most once a second, however often probes come) and free of secrets.
//   GET /health-checks        readiness: store reachable, PKI loaded and current, listeners up (503 if not)
//   GET /health-checks/ready  the same
//   GET /health-checks/live   liveness: the process answers (no store, no I/O); 200 while it does
import { X509Certificate } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import type { Ctx } from '../model/context.js';

export interface CheckResult {
  id: string;
  healthy: boolean;
  lastCheckTime: string;
  lastCheckDuration: string;
  details?: string;
}

export interface HealthReport {
  healthy: boolean;
  checks: CheckResult[];
}

/** A check answers healthy with optional details, or throws with what is wrong. */
type Check = () => Promise<string | void> | string | void;

const STORE_TIMEOUT_MS = 2000;
/** Results younger than this are answered again without running the checks. */
const CACHE_MS = 1000;

export class Health {
  private readonly checks = new Map<string, Check>();
  private cached?: { at: number; report: Promise<HealthReport> };

  constructor(ctx: Ctx) {
    this.add('store.read', async () => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${STORE_TIMEOUT_MS} ms`)), STORE_TIMEOUT_MS)));
      try {
        await Promise.race([sql`select 1`.execute(ctx.store.db), timeout]);
      } finally {
        clearTimeout(timer);
      }
      return ctx.store.file ? 'sqlite' : 'postgresql';
    });
    this.add('pki.loaded', () => {
      if (!ctx.pki.serverPem || !ctx.pki.serverKeyPem || !ctx.pki.caBundlePem) throw new Error('the server certificate, its key or the CA bundle is not loaded');
      const notAfter = new Date(new X509Certificate(ctx.pki.serverPem).validTo);
      if (notAfter.getTime() < ctx.clock.now().getTime()) throw new Error(`the server certificate expired at ${notAfter.toISOString()}`);
    });
  }

  /** Another check (the listeners, added by the controller once they are up). */
  add(id: string, check: Check) {
    this.checks.set(id, check);
    this.cached = undefined;
  }

  report(): Promise<HealthReport> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at > CACHE_MS) this.cached = { at: now, report: this.run() };
    return this.cached.report;
  }

  private async run(): Promise<HealthReport> {
    const checks = await Promise.all(
      [...this.checks].map(async ([id, check]): Promise<CheckResult> => {
        const start = performance.now();
        const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        try {
          const details = await check();
          return { id, healthy: true, lastCheckTime: at, lastCheckDuration: duration(performance.now() - start), ...(details ? { details } : {}) };
        } catch (e) {
          return { id, healthy: false, lastCheckTime: at, lastCheckDuration: duration(performance.now() - start), details: (e as Error).message };
        }
      }),
    );
    return { healthy: checks.every((c) => c.healthy), checks };
  }
}

/** Go's duration text, as upstream prints it: "1.234ms", "2s". */
function duration(ms: number): string {
  if (ms >= 1000) return `${+(ms / 1000).toFixed(3)}s`;
  if (ms >= 1) return `${+ms.toFixed(3)}ms`;
  return `${Math.round(ms * 1000)}µs`;
}

/** The JSON answer and its status for a path under /health-checks (undefined: not a health path). */
export async function healthAnswer(health: Health, path: string, short: boolean): Promise<{ status: number; body: unknown } | undefined> {
  const sub = path.replace(/^\/health-checks\/?/, '').replace(/\/$/, '');
  if (sub === 'live') return { status: 200, body: { data: { healthy: true, checks: [{ id: 'process.alive', healthy: true }] }, meta: {} } };
  if (sub !== '' && sub !== 'ready') return undefined;
  const report = await health.report();
  const checks = short ? report.checks.map(({ id, healthy }) => ({ id, healthy })) : report.checks;
  return { status: report.healthy ? 200 : 503, body: { data: { healthy: report.healthy, checks }, meta: {} } };
}

declare module 'fastify' {
  interface FastifyInstance {
    health: Health;
  }
}

export function registerHealth(app: FastifyInstance, ctx: Ctx) {
  const health = new Health(ctx);
  app.decorate('health', health);
  const handler = async (req: { url: string; query: unknown }, reply: { code(n: number): unknown }) => {
    const answer = await healthAnswer(health, req.url.split('?')[0], (req.query as { type?: string }).type === 'short');
    // healthAnswer knows every path registered below.
    reply.code(answer!.status);
    return answer!.body;
  };
  const schema = { hide: true, querystring: { type: 'object', properties: { type: { type: 'string', maxLength: 16 } } } } as never;
  for (const url of ['/health-checks', '/health-checks/ready', '/health-checks/live']) {
    app.get(url, { config: { access: 'public' }, schema, exposeHeadRoute: true }, handler as never);
  }
  return health;
}
