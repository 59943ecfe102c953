// Prometheus metrics, through prom-client (the Node ecosystem's client: its exposition format, default
// process and event-loop metrics and histogram buckets are what dashboards and alert rules expect).
// Each app has its own registry (tests run several controllers in one process). Labels are kept to
// small fixed sets: route patterns (never a path with an id in it), methods, status codes, outcomes.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { AUTH_METHODS } from '../model/auth/authenticate.js';
import type { Ctx } from '../model/context.js';
import type { ZtcEvent } from '../model/events/types.js';
import type { DataPlaneStats } from '../fabric/thread.js';
import type { ListenerCounts } from '../fabric/channel/guard.js';

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly latency: Histogram<'method' | 'route' | 'status'>;
  private readonly logins: Counter<'method' | 'outcome'>;
  private readonly enrollments: Counter<'method' | 'outcome'>;
  private readonly queries: Histogram<'outcome'>;
  private readonly dialSetup: Histogram;
  private readonly reports: Counter;
  private readonly dataPlane = { routers: 0, sdkConnections: 0, circuits: 0, bytesRelayed: 0, dialsOk: 0, dialsFailed: 0 };
  /** The data plane's listeners, as last reported; the API port's refusals, counted here. */
  private listeners: DataPlaneStats['listeners'] = {};
  private apiRefused = 0;
  private readonly postureFailures: Counter<'check' | 'type' | 'mode'>;
  private readonly loginsFailed: Counter<'method' | 'reason'>;
  private readonly enrollmentsFailed: Counter<'method' | 'reason'>;
  private readonly tlsFailed: Counter<'listener' | 'reason'>;
  private readonly dialFailures: Counter<'cause'>;
  private readonly pkiRenewals: Counter<'certificate' | 'outcome'>;
  /** Stops hearing the events the counters below count (when the app closes). */
  readonly unsubscribe: () => void;

  constructor(ctx: Ctx) {
    const registers = [this.registry];
    // process_* (memory, CPU, open files) and nodejs_* (event-loop lag, heap, GC) as every Node exporter names them.
    // The event-loop delay is sampled every 50 ms, not prom-client's 10 ms: each sample is a timer that
    // wakes the process (at 10 ms, a bare Node process used 3.6 ms of CPU a second for them; 0.8 at
    // 50 ms); each sample still measures its delay exactly.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 50 });
    this.requests = new Counter({ name: 'ztc_http_requests_total', help: 'API requests answered, by route pattern and status', labelNames: ['method', 'route', 'status'], registers });
    this.latency = new Histogram({ name: 'ztc_http_request_duration_seconds', help: 'Time to answer an API request, by route pattern and status', labelNames: ['method', 'route', 'status'], buckets: SECONDS, registers });
    this.logins = new Counter({ name: 'ztc_logins_total', help: 'Authentication attempts (POST /authenticate), by method and outcome (success, failure, invalid, throttled)', labelNames: ['method', 'outcome'], registers });
    this.enrollments = new Counter({ name: 'ztc_enrollments_total', help: 'Enrollment attempts, by method and outcome', labelNames: ['method', 'outcome'], registers });
    this.queries = new Histogram({ name: 'ztc_store_query_duration_seconds', help: 'Database query time on the API thread, by outcome', labelNames: ['outcome'], buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers });
    this.dialSetup = new Histogram({ name: 'ztc_dial_setup_duration_seconds', help: 'Time for a dial through the embedded edge router to reach its host', buckets: SECONDS, registers });
    this.reports = new Counter({ name: 'ztc_data_plane_reports_total', help: 'Reports received from the data plane\'s thread (every 5 s while it runs: a stalled count means a stuck thread)', registers });
    ctx.store.queryTimes.observer = (ms, failed) => this.queries.observe({ outcome: failed ? 'error' : 'ok' }, ms / 1000);
    // Counted from the events the model emits (model/events/emit.ts), so each is counted where it is recorded.
    this.postureFailures = new Counter({
      name: 'ztc_posture_check_failures_total',
      help: 'Posture checks that failed when a session was asked for, by check (its name), type and mode: enforced (the session was refused, unless another policy granted it) or report-only (recorded, never denied)',
      labelNames: ['check', 'type', 'mode'],
      registers,
    });
    // Failed authentication of every kind (ziti#1834), by what failed and why: the events (with the
    // address and, where known, the identity) say who.
    this.loginsFailed = new Counter({
      name: 'ztc_logins_failed_total',
      help: 'Logins refused, through /authenticate and the OIDC login alike, by method (password, cert, ext-jwt, mfa: a login\'s second factor) and reason (unknown-credential, wrong-password, locked, identity-disabled, method-not-allowed, no-certificate, certificate-expired, certificate-untrusted, invalid-token, wrong-mfa-code, mfa-not-enrolled, throttled, invalid-request, other)',
      labelNames: ['method', 'reason'],
      registers,
    });
    this.enrollmentsFailed = new Counter({
      name: 'ztc_enrollments_failed_total',
      help: 'Enrollments refused, by method and reason (the error code the client was answered)',
      labelNames: ['method', 'reason'],
      registers,
    });
    this.tlsFailed = new Counter({
      name: 'ztc_tls_handshakes_failed_total',
      help: 'TLS handshakes that failed, by listener (api, edge, ctrl) and reason (timeout, disconnected, not-tls, no-common-protocol, no-common-alpn, client-alert, refused-certificate, other)',
      labelNames: ['listener', 'reason'],
      registers,
    });
    // Every router's failed dials (the embedded router's and upstream routers' CreateCircuit), from their
    // fabric.circuits failed events (fabric/dial-failures.ts).
    this.dialFailures = new Counter({
      name: 'ztc_dial_failures_total',
      help: 'Dials that made no circuit, on the embedded router and through upstream routers alike, by cause: upstream\'s circuit failure causes (NO_TERMINATORS, NO_PATH, ROUTER_RESPONSE_TIMEOUT, ROUTER_ERR_CONN_REFUSED, ROUTER_ERR_DIAL_TIMED_OUT, ROUTER_ERR_INVALID_TERMINATOR, ...) and the session checks\' (ACCESS_DENIED, INVALID_SESSION, INVALID_API_SESSION, WRONG_SESSION_TYPE, INVALID_EDGE_ROUTER_FOR_SESSION, ENCRYPTION_DATA_MISSING)',
      labelNames: ['cause'],
      registers,
    });
    // The controller's own certificates renewing by themselves (model/pki/renewal.ts), from its pki events.
    this.pkiRenewals = new Counter({
      name: 'ztc_pki_renewals_total',
      help: 'Renewals of the controller\'s own certificates while serving, by certificate (server, intermediate, edge-router) and outcome (renewed, failed)',
      labelNames: ['certificate', 'outcome'],
      registers,
    });
    this.unsubscribe = ctx.events.subscribe((e) => this.heard(e));

    // Counts of live things, read at scrape: one small count query each.
    const count = (table: 'api_sessions' | 'sessions' | 'enrollments') => async () =>
      Number((await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(ctx.store.db)).rows[0]?.n ?? 0);
    const live = (name: string, help: string, read: () => Promise<number>) =>
      new Gauge({ name, help, registers, async collect() { this.set(await read()); } });
    live('ztc_api_sessions', 'API sessions open (every controller on the database)', count('api_sessions'));
    live('ztc_sessions', 'Service sessions (dial and bind) open', count('sessions'));
    live('ztc_enrollments_pending', 'Enrollments created and not yet used', count('enrollments'));
    const plane = this.dataPlane;
    const gauge = (name: string, help: string, key: keyof typeof plane) => new Gauge({ name, help, registers, collect() { this.set(plane[key]); } });
    gauge('ztc_routers_connected', 'Upstream routers connected over the control channel', 'routers');
    gauge('ztc_sdk_connections', 'SDK connections to the embedded edge router', 'sdkConnections');
    gauge('ztc_circuits', 'Circuits open through the embedded edge router', 'circuits');
    // Totals kept by the data-plane thread: exposed as counters that follow its numbers.
    const total = (name: string, help: string, key: keyof typeof plane) => new Counter({ name, help, registers, collect() { this.reset(); this.inc(plane[key]); } });
    total('ztc_relayed_bytes_total', 'Bytes relayed by the embedded edge router', 'bytesRelayed');
    total('ztc_dials_total', 'Dials through the embedded edge router that reached their host', 'dialsOk');
    total('ztc_dials_failed_total', 'Dials through the embedded edge router that failed', 'dialsFailed');
    // What one client may hold, by listener (api, edge, ctrl): the per-address cap and the data plane's frame limits.
    const listeners = () => Object.entries(this.listeners) as [string, ListenerCounts][];
    const apiRefused = () => this.apiRefused;
    new Counter({
      name: 'ztc_connections_refused_total',
      help: 'Connections closed by the per-address cap (--max-connections-per-address), by listener: on edge and ctrl the oldest of the address\'s connections not yet authenticated, on api the oldest that had not sent a request (or the newcomer when every one had)',
      labelNames: ['listener', 'reason'],
      registers,
      collect() {
        this.reset();
        this.inc({ listener: 'api', reason: 'address_cap' }, apiRefused());
        for (const [listener, c] of listeners()) this.inc({ listener, reason: 'address_cap' }, c.refusedAddressCap);
      },
    });
    new Counter({
      name: 'ztc_connections_closed_total',
      help: 'Data-plane connections closed for a frame that did not complete in time (frame_deadline) or that would have taken the partial frames of their port over its budget (frame_budget), by listener',
      labelNames: ['listener', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const [listener, c] of listeners()) {
          this.inc({ listener, reason: 'frame_deadline' }, c.closedFrameDeadline);
          this.inc({ listener, reason: 'frame_budget' }, c.closedFrameBudget);
        }
      },
    });
    new Gauge({
      name: 'ztc_partial_frame_bytes',
      help: 'Bytes held in frames not yet complete, by data-plane listener (at most the budget each)',
      labelNames: ['listener'],
      registers,
      collect() {
        this.reset();
        for (const [listener, c] of listeners()) this.set({ listener }, c.partialFrameBytes);
      },
    });
  }

  /** An event the counters count. */
  private heard(e: ZtcEvent) {
    if (e.namespace === 'posture') {
      for (const c of e.checks) this.postureFailures.inc({ check: c.name.slice(0, 100), type: c.type, mode: c.report_only ? 'report-only' : 'enforced' });
    } else if (e.namespace === 'authentication' && !e.success) {
      this.loginsFailed.inc({ method: LOGIN_METHODS[e.type] ?? 'other', reason: e.failure ?? 'other' });
    } else if (e.namespace === 'enrollment' && e.event_type === 'fail') {
      this.enrollmentsFailed.inc({ method: ENROLL_METHODS.has(e.method) ? e.method : 'other', reason: enrollmentReason(e.reason) });
    } else if (e.namespace === 'tls') {
      this.tlsFailed.inc({ listener: e.listener, reason: e.reason }, e.count);
    } else if (e.namespace === 'fabric.circuits' && e.event_type === 'failed') {
      this.dialFailures.inc({ cause: e.failure_cause ?? 'INTERNAL' });
    } else if (e.namespace === 'pki' && (e.event_type === 'renewed' || e.event_type === 'renewal-failed')) {
      this.pkiRenewals.inc({ certificate: e.certificate, outcome: e.event_type === 'renewed' ? 'renewed' : 'failed' });
    }
  }

  /**
   * The controller's own certificates, read at scrape: seconds until each expires, and until each renews
   * by itself (negative: overdue, its renewal failing; none for the root, which never does).
   */
  certificates(read: () => { certificate: string; notAfter: number; renewsAt: number | null }[], now: () => number) {
    const registers = [this.registry];
    new Gauge({
      name: 'ztc_certificate_expiry_seconds',
      help: 'Seconds until each of the controller\'s own certificates expires (root, intermediate, server, edge-router): alert well before 0',
      labelNames: ['certificate'],
      registers,
      collect() {
        this.reset();
        for (const c of read()) this.set({ certificate: c.certificate }, Math.round((c.notAfter - now()) / 1000));
      },
    });
    new Gauge({
      name: 'ztc_certificate_renewal_seconds',
      help: 'Seconds until each of the controller\'s own certificates renews by itself (a third of its lifetime left); negative when overdue (its renewal keeps failing). The root does not renew by itself',
      labelNames: ['certificate'],
      registers,
      collect() {
        this.reset();
        for (const c of read()) if (c.renewsAt !== null) this.set({ certificate: c.certificate }, Math.round((c.renewsAt - now()) / 1000));
      },
    });
  }

  /** A report from the data-plane thread. */
  dataPlaneStats(s: DataPlaneStats) {
    const { dialSetupMs, listeners, ...rest } = s;
    Object.assign(this.dataPlane, rest);
    this.listeners = listeners ?? {};
    this.reports.inc();
    for (const ms of dialSetupMs) this.dialSetup.observe(ms / 1000);
  }

  /** A connection to the API port closed by the per-address cap. */
  connectionRefused() {
    this.apiRefused++;
  }

  /** Count one answered request (an onResponse hook). */
  observe(request: FastifyRequest, reply: FastifyReply) {
    const route = request.routeOptions.url ?? 'unmatched';
    const status = String(reply.statusCode);
    const labels = { method: request.method, route, status };
    this.requests.inc(labels);
    this.latency.observe(labels, reply.elapsedTime / 1000);
    if (request.method !== 'POST') return;
    if (route.endsWith('/authenticate')) {
      const method = String((request.query as { method?: unknown } | undefined)?.method ?? '');
      this.logins.inc({ method: (AUTH_METHODS as readonly string[]).includes(method) ? method : 'other', outcome: outcome(reply.statusCode) });
    } else if (route.includes('/enroll')) {
      // /edge/client/v1/enroll/ott -> ott; the bare /enroll takes the method from its query.
      const m = /\/enroll(?:\/(.+))?$/.exec(route)?.[1] ?? String((request.query as { method?: unknown } | undefined)?.method ?? 'other');
      this.enrollments.inc({ method: ENROLL_METHODS.has(m) ? m : 'other', outcome: outcome(reply.statusCode) });
    }
  }

  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

const ENROLL_METHODS = new Set(['ott', 'ottca', 'updb', 'ca', 'erott', 'trott', 'extend/router', 'challenge', 'token']);
/** Authentication events' methods (upstream's names) as the metrics name them. */
const LOGIN_METHODS: Record<string, string> = { updb: 'password', cert: 'cert', 'ext-jwt': 'ext-jwt', mfa: 'mfa' };

/** An enrollment refusal's reason as a label: its error code (INVALID_ENROLLMENT_TOKEN...), never its message. */
function enrollmentReason(reason: string): string {
  const code = /^([A-Z][A-Z0-9_]{1,63}):/.exec(reason)?.[1];
  if (code) return code;
  if (reason === 'internal error') return 'internal';
  const status = /^HTTP (\d{3})$/.exec(reason)?.[1];
  return status ? `http-${status}` : 'other';
}

function outcome(status: number): string {
  if (status < 300) return 'success';
  if (status === 429) return 'throttled';
  if (status === 401 || status === 403 || status === 404) return 'failure';
  if (status < 500) return 'invalid';
  return 'error';
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Absent when the config turns metrics off. */
    metrics: Metrics | undefined;
  }
}

/**
 * Counts every request, and serves GET /metrics. On the API port the scrape is an administrator's read
 * (an admin, a read-only admin, or an API token: Prometheus sends it as `Authorization: Bearer`), because
 * the API port usually faces the internet; upstream leaves its metrics open unless a scrape certificate
 * is configured. `--metrics-port` serves them open, on a port meant for a trusted network (ops-listener.ts).
 */
export function registerMetrics(app: FastifyInstance, ctx: Ctx) {
  const metrics = new Metrics(ctx);
  app.decorate('metrics', metrics);
  app.addHook('onClose', (_app, done) => {
    metrics.unsubscribe();
    done();
  });
  // A callback hook: an async one costs a promise for every request.
  app.addHook('onResponse', (request, reply, done) => {
    try {
      metrics.observe(request, reply);
    } finally {
      done();
    }
  });
  app.get(
    '/metrics',
    {
      config: { access: 'admin' },
      schema: { hide: true, summary: 'Prometheus metrics (text exposition format)' } as never,
    },
    async (_req, reply) => {
      const { contentType, body } = await metrics.exposition();
      return reply.type(contentType).send(body);
    },
  );
  return metrics;
}
