// Prometheus metrics and health checks on a real controller over TLS, and on the open metrics port.
// The exposition text is read with a real parser of the Prometheus text format, as a scrape would.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, CLIENT, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';
import { familyOf, parseExposition, sampleValue, type MetricFamily } from '../helpers/prometheus.js';
import { startTlsController } from '../helpers/tls.js';

let running: Running;
let base: string;
let ca: string;
let metricsPort: number;

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

function call(method: string, path: string, o: { token?: string; bearer?: string; body?: unknown } = {}) {
  return new Promise<{ status: number; text: string; type: string }>((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (o.token) headers['zt-session'] = o.token;
    if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
    if (o.body) headers['content-type'] = 'application/json';
    const req = https.request(`${base}${path}`, { method, ca, agent: false, headers }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, type: String(res.headers['content-type'] ?? '') }));
    });
    req.on('error', reject);
    if (o.body) req.write(JSON.stringify(o.body));
    req.end();
  });
}

function plain(path: string, method = 'GET') {
  return new Promise<{ status: number; text: string; type: string }>((resolve, reject) => {
    const req = http.request(`http://127.0.0.1:${metricsPort}${path}`, { method, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, type: String(res.headers['content-type'] ?? '') }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  process.env.ZTC_STATS_MS = '200';
  metricsPort = await freePort();
  running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase(), metricsPort }));
  base = running.url.replace('localhost', '127.0.0.1');
  ca = running.ctx.pki.caBundlePem;
});
afterAll(() => running?.close());

describe('metrics', () => {
  let admin: string;

  it('needs an administrator on the API port', async () => {
    expect((await call('GET', '/metrics')).status).toBe(401);
    const login = await call('POST', `${CLIENT}/authenticate?method=password`, { body: ADMIN });
    expect(login.status).toBe(200);
    admin = JSON.parse(login.text).data.token;
  });

  it('counts requests by route pattern, logins by method and outcome, and reads live counts at scrape', async () => {
    // A failed login, an unknown method, two reads of one identity by id, a 404 by path.
    expect((await call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'admin', password: 'wrong-password' } })).status).toBe(401);
    expect((await call('POST', `${CLIENT}/authenticate?method=no-such-${Date.now()}`, { body: {} })).status).toBe(400);
    const made = await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'scraped', type: 'User', isAdmin: false } });
    const id = JSON.parse(made.text).data.id as string;
    for (let i = 0; i < 2; i++) expect((await call('GET', `${MGMT}/identities/${id}`, { token: admin })).status).toBe(200);
    expect((await call('GET', `/no/such/${id}`)).status).toBe(404);

    const scrape = await call('GET', '/metrics', { bearer: admin });
    expect(scrape.status).toBe(200);
    expect(scrape.type).toMatch(/^text\/plain; version=0\.0\.4/);
    const fams = await parseExposition(scrape.text);

    expect(familyOf(fams, 'ztc_http_requests_total').type).toBe('counter');
    expect(sampleValue(fams, 'ztc_http_requests_total', { method: 'GET', route: `${MGMT}/identities/:id`, status: '200' })).toBe(2);
    expect(sampleValue(fams, 'ztc_http_requests_total', { route: 'unmatched', status: '404' })).toBe(1);
    // No label value carries an id or what a caller typed: route patterns and fixed sets only.
    const labelValues = fams.flatMap((f) => f.samples.flatMap((m) => Object.values(m.labels)));
    expect(labelValues.filter((v) => v.includes(id) || v.includes('no-such-') || v.includes('/no/'))).toEqual([]);

    const latency = 'ztc_http_request_duration_seconds';
    expect(familyOf(fams, latency).type).toBe('histogram');
    const idRoute = { method: 'GET', route: `${MGMT}/identities/:id`, status: '200' };
    expect(sampleValue(fams, latency, idRoute, `${latency}_count`)).toBe(2);
    expect(sampleValue(fams, latency, { ...idRoute, le: '+Inf' }, `${latency}_bucket`)).toBe(2);

    expect(sampleValue(fams, 'ztc_logins_total', { method: 'password', outcome: 'success' })).toBe(1);
    expect(sampleValue(fams, 'ztc_logins_total', { method: 'password', outcome: 'failure' })).toBe(1);
    expect(sampleValue(fams, 'ztc_logins_total', { method: 'other', outcome: 'invalid' })).toBe(1);

    expect(sampleValue(fams, 'ztc_api_sessions')).toBe(1);
    expect(sampleValue(fams, 'ztc_sessions')).toBe(0);
    expect(familyOf(fams, 'ztc_enrollments_pending').type).toBe('gauge');
    const queries = 'ztc_store_query_duration_seconds';
    expect(sampleValue(fams, queries, { outcome: 'ok' }, `${queries}_count`)).toBeGreaterThan(0);
    // The process: event-loop lag and memory, under the names every Node exporter uses.
    expect(sampleValue(fams, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sampleValue(fams, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('reports the data plane from its thread', async () => {
    const deadline = Date.now() + 5000;
    let fams: MetricFamily[] = [];
    // The thread reports every 200 ms here (ZTC_STATS_MS); nothing is connected, so every count is 0.
    while (Date.now() < deadline) {
      fams = await parseExposition((await call('GET', '/metrics', { token: admin })).text);
      if ((sampleValue(fams, 'ztc_data_plane_reports_total') ?? 0) > 0) break;
    }
    for (const name of ['ztc_routers_connected', 'ztc_sdk_connections', 'ztc_circuits', 'ztc_relayed_bytes_total', 'ztc_dials_total', 'ztc_dials_failed_total']) {
      expect(sampleValue(fams, name)).toBe(0);
    }
    expect(familyOf(fams, 'ztc_dial_setup_duration_seconds').type).toBe('histogram');
  });

  it('are open on the metrics port, which serves nothing else', async () => {
    const r = await plain('/metrics');
    expect(r.status).toBe(200);
    expect(sampleValue(await parseExposition(r.text), 'ztc_logins_total', { method: 'password', outcome: 'success' })).toBe(1);
    expect((await plain(`${MGMT}/identities`)).status).toBe(404);
    expect((await plain('/metrics', 'POST')).status).toBe(405);
  });
});

describe('health checks', () => {
  it('answers readiness in upstream\'s shape without a session, and liveness', async () => {
    for (const path of ['/health-checks', '/health-checks/ready']) {
      const r = await call('GET', path);
      expect(r.status).toBe(200);
      const body = JSON.parse(r.text);
      expect(body.meta).toEqual({});
      expect(body.data.healthy).toBe(true);
      const ids = body.data.checks.map((c: { id: string }) => c.id).sort();
      expect(ids).toEqual(['api.listener', 'data-plane.thread', 'pki.loaded', 'pki.renewal', 'store.read']);
      // When each of the controller's own certificates renews by itself (a third of its lifetime left).
      expect(body.data.checks.find((c: { id: string }) => c.id === 'pki.renewal').details).toMatch(/^root expires \S+ \(not renewed by itself\), intermediate renews at \S+, server renews at \S+, edge-router renews at \S+$/);
      for (const c of body.data.checks) {
        expect(c.healthy).toBe(true);
        expect(c.lastCheckTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
        expect(c.lastCheckDuration).toMatch(/^[\d.]+(µs|ms|s)$/);
      }
      // Nothing secret: no key material, no token, no database address.
      expect(r.text).not.toMatch(/PRIVATE KEY|postgres:\/\/|BEGIN CERTIFICATE/);
    }
    const short = JSON.parse((await call('GET', '/health-checks?type=short')).text);
    expect(Object.keys(short.data.checks[0]).sort()).toEqual(['healthy', 'id']);
    const live = await call('GET', '/health-checks/live');
    expect(live.status).toBe(200);
    expect(JSON.parse(live.text).data.healthy).toBe(true);
    expect((await plain('/health-checks')).status).toBe(200);
    expect((await plain('/health-checks/live')).status).toBe(200);
    expect((await call('GET', '/health-checks/nothing')).status).toBe(404);
  });

  it('says 503 and which check failed when the store cannot answer', async () => {
    // The store's one executor refuses every query (an own property shadowing its method) until restored.
    const executor = running.ctx.store.db.getExecutor() as unknown as { executeQuery?: unknown };
    executor.executeQuery = async () => {
      throw new Error('the database went away');
    };
    try {
      // Past the one-second cache of the last answer.
      await new Promise((r) => setTimeout(r, 1100));
      const r = await call('GET', '/health-checks');
      expect(r.status).toBe(503);
      const body = JSON.parse(r.text);
      expect(body.data.healthy).toBe(false);
      const store = body.data.checks.find((c: { id: string }) => c.id === 'store.read');
      expect(store).toMatchObject({ healthy: false, details: 'the database went away' });
      expect((await call('GET', '/health-checks/live')).status).toBe(200);
      expect((await plain('/health-checks')).status).toBe(503);
    } finally {
      delete executor.executeQuery;
    }
  });
});

describe('metrics off (--no-metrics)', () => {
  it('count nothing: /metrics is 404 on the API port and the metrics port, the health checks still answer', async () => {
    const port = await freePort();
    const off = await startTlsController({ router: false, ctrl: false, metrics: false, metricsPort: port });
    try {
      const token = await off.login();
      expect((await off.call('GET', '/metrics', { token })).status).toBe(404);
      expect((await off.call('GET', '/health-checks')).status).toBe(200);
      expect(off.running.ctx.store.queryTimes.observer).toBeUndefined();
      const open = (p: string) => new Promise<{ status: number; text: string }>((resolve, reject) => {
        http.get(`http://127.0.0.1:${port}${p}`, { agent: false }, (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        }).on('error', reject);
      });
      const metrics = await open('/metrics');
      expect(metrics.status).toBe(404);
      expect(metrics.text).toMatch(/metrics are off/);
      expect((await open('/health-checks/live')).status).toBe(200);
    } finally {
      await off.close();
    }
  });
});
