// OpenZiti's controller scale models (Small, Medium, Large), loaded through the HTTP API as an
// operator's script would (parallel creates), then the calls a client makes, timed for the identity
// that reaches every service and router and sorts last, plus an administrator's filtered list.
//   BENCH_MODELS=small,medium,large (default; on PostgreSQL BENCH_PG_MODELS, see bench/scale.ts)  BENCH_MODEL_SECONDS=3 per call, after BENCH_WARMUP_SECONDS=1 untimed
//   Each run ends with the client calls' goals (bench/goals.ts), met or missed.
//   BENCH_PAIR_MODEL=large: the model also measured behind two controllers on one PostgreSQL database
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { openDataDir } from '../src/server/controller.js';
import { seedIdentities } from './seed.js';
import { goalRows, type ModelResult } from './goals.js';
import { call, timedCall, concurrently, database, fmtSeries, login, ok, PASSWORD, peakRssMb, sequential, startServer, stopServer, tempDir, type Series, type Server } from './http.js';

type Row = [string, string, string];

export interface Model {
  name: string;
  services: number;
  identities: number;
  routers: number;
  servicePolicies: number;
  routerPolicies: number;
  serviceRouterPolicies: number;
}

export const MODELS: Model[] = [
  { name: 'small', services: 20, identities: 100, routers: 10, servicePolicies: 10, routerPolicies: 10, serviceRouterPolicies: 10 },
  { name: 'medium', services: 100, identities: 5_000, routers: 100, servicePolicies: 50, routerPolicies: 50, serviceRouterPolicies: 10 },
  { name: 'large', services: 200, identities: 100_000, routers: 500, servicePolicies: 250, routerPolicies: 250, serviceRouterPolicies: 100 },
];

const M = '/edge/management/v1';
const C = '/edge/client/v1';
const CONCURRENCY = 8;
const SECONDS = Number(process.env.BENCH_MODEL_SECONDS ?? 3);
// Each call is made untimed this long first, as a controller that has served for a while has it: its
// route's code optimized, its statements prepared. Timed from the first call, the first second set the
// p99 (current identity, Medium: p99 1.1 ms measured first, 0.4 ms measured again right after, SQLite
// and PostgreSQL alike). Upstream's figures in bench/goals.ts are measured the same way (README).
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
const pad = (i: number) => String(i).padStart(6, '0');

/**
 * Everything through the API. Each policy i selects the identities with attribute i<i> (and the probe),
 * the services with s<i> and the routers with r<i>; services and routers are spread over the policies,
 * so the probe identity reaches all of them through many policies and every other identity through one.
 */
export async function loadModel(url: string, token: string, m: Model) {
  const t: Record<string, number> = {};
  const timed = async (what: string, f: () => Promise<void>) => {
    const start = performance.now();
    await f();
    t[what] = (performance.now() - start) / 1000;
  };
  const post = (p: string, body: unknown) => ok(call(url, 'POST', `${M}${p}`, { token, body }), `POST ${p}`);
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  const total = performance.now();
  await timed('services', () => concurrently(range(m.services), CONCURRENCY, async (i) => {
    await post('/services', { name: `svc-${pad(i)}`, encryptionRequired: true, roleAttributes: [`s${i % m.servicePolicies}`, `q${i % m.serviceRouterPolicies}`] });
  }));
  await timed('routers', () => concurrently(range(m.routers), CONCURRENCY, async (i) => {
    await post('/edge-routers', { name: `er-${pad(i)}`, roleAttributes: [`r${i % m.routerPolicies}`] });
  }));
  await timed('identities', () => concurrently(range(m.identities), CONCURRENCY, async (i) => {
    await post('/identities', { name: `id-${pad(i)}`, type: 'Device', isAdmin: false, roleAttributes: [`i${i % m.servicePolicies}`] });
  }));
  await timed('policies', async () => {
    await concurrently(range(m.servicePolicies), CONCURRENCY, async (i) => {
      await post('/service-policies', { name: `sp-${pad(i)}`, type: i % 2 ? 'Bind' : 'Dial', semantic: 'AnyOf', identityRoles: [`#i${i}`, '#probe'], serviceRoles: [`#s${i}`] });
    });
    await concurrently(range(m.routerPolicies), CONCURRENCY, async (i) => {
      await post('/edge-router-policies', { name: `erp-${pad(i)}`, semantic: 'AnyOf', identityRoles: [`#i${i % m.servicePolicies}`, '#probe'], edgeRouterRoles: [`#r${i}`] });
    });
    await concurrently(range(m.serviceRouterPolicies), CONCURRENCY, async (i) => {
      await post('/service-edge-router-policies', { name: `serp-${pad(i)}`, semantic: 'AnyOf', serviceRoles: [`#q${i}`], edgeRouterRoles: [`#r${i % m.routerPolicies}`] });
    });
  });
  t.total = (performance.now() - total) / 1000;
  // The probe: sorts after every other identity and is in every policy.
  const probe = await post('/identities', { name: 'zz-probe', type: 'User', isAdmin: false, roleAttributes: ['probe'] });
  await post('/authenticators', { identityId: probe.data.id, method: 'updb', username: 'zz-probe', password: PASSWORD });
  return t;
}

interface Measured {
  load: Record<string, number>;
  calls: Record<string, Series>;
  visible: { services: number; routers: number };
  rss: number;
  model?: ModelRoundTrip;
}

interface ModelRoundTrip {
  exportS: number;
  bytes: number;
  exportRss: number;
  importS: number;
  importRss: number;
  created: number;
}

/** `ztc export` of the loaded model, and its import into an empty controller (the same database kind). */
async function exportAndImport(server: Server, admin: string, dbServer: string | undefined): Promise<ModelRoundTrip> {
  console.error('… exporting the model and importing it into an empty controller');
  let start = performance.now();
  const exported = await ok(call(server.url, 'GET', `${M}/export`, { token: admin }), 'export');
  const exportS = (performance.now() - start) / 1000;
  const bytes = Buffer.byteLength(JSON.stringify(exported.data));
  const exportRss = peakRssMb(server.pid);
  const empty = await startServer(tempDir(), await database(dbServer));
  const token = await login(empty.url);
  start = performance.now();
  const imported = await ok(call(empty.url, 'POST', `${M}/import`, { token, body: exported.data }), 'import');
  const importS = (performance.now() - start) / 1000;
  const importRss = peakRssMb(empty.pid);
  await stopServer(empty);
  return { exportS, bytes, exportRss, importS, importRss, created: imported.data.counts?.create ?? imported.data.plan.length };
}

const CALLS = ['client service list (limit 500)', 'one service by name', 'session create', 'current identity', 'its edge routers', 'service updates poll', 'admin identity list (filter, sort)'] as const;

/** Exported for timing another controller by hand (upstream's quickstart, README): its URL as a Server, its admin's token. */
export async function measureCalls(servers: Pick<Server, 'url'>[], admin: string[], m: Model): Promise<Omit<Measured, 'load' | 'rss'>> {
  const url = servers[0].url;
  const tokens = await Promise.all(servers.map((s) => login(s.url, 'zz-probe')));
  const services = await ok(call(url, 'GET', `${C}/services?limit=500`, { token: tokens[0] }), 'probe services');
  const routers = await ok(call(url, 'GET', `${C}/current-identity/edge-routers?limit=500`, { token: tokens[0] }), 'probe routers');
  const lastName = `svc-${pad(m.services - 1)}`;
  const dialable = services.data.find((s: { permissions: string[] }) => s.permissions.includes('Dial'));
  const filter = encodeURIComponent(`name contains "${pad(m.identities - 1).slice(-3)}" sort by name desc`);
  const paths: Record<(typeof CALLS)[number], { method?: string; path: string; body?: unknown; admin?: boolean }> = {
    'client service list (limit 500)': { path: `${C}/services?limit=500` },
    'one service by name': { path: `${C}/services?filter=${encodeURIComponent(`name = "${lastName}"`)}` },
    'session create': { method: 'POST', path: `${C}/sessions`, body: { serviceId: dialable.id, type: 'Dial' } },
    'current identity': { path: `${C}/current-identity` },
    'its edge routers': { path: `${C}/current-identity/edge-routers?limit=500` },
    // What SDKs ask every few seconds to know whether to list their services again (no goal).
    'service updates poll': { path: `${C}/current-api-session/service-updates` },
    'admin identity list (filter, sort)': { path: `${M}/identities?filter=${filter}&limit=25`, admin: true },
  };
  const calls: Record<string, Series> = {};
  for (const name of CALLS) {
    const c = paths[name];
    // With two controllers, each call goes to the next one in turn.
    let k = 0;
    const once = async () => {
      const i = k++ % servers.length;
      return timedCall(servers[i].url, c.method ?? 'GET', c.path, { token: c.admin ? admin[i] : tokens[i], body: c.body });
    };
    if (WARMUP_SECONDS > 0) await sequential(WARMUP_SECONDS, once, { min: 20 });
    calls[name] = await sequential(SECONDS, once, { min: 20 });
  }
  return { calls, visible: { services: services.meta.pagination.totalCount, routers: routers.meta.pagination.totalCount } };
}

async function runModel(m: Model, dbServer: string | undefined): Promise<Measured> {
  const dir = tempDir();
  const db = await database(dbServer);
  const server = await startServer(dir, db);
  const admin = await login(server.url);
  console.error(`… [${dbServer ? 'postgres' : 'sqlite'}] loading the ${m.name} model through the API`);
  const load = await loadModel(server.url, admin, m);
  // PostgreSQL plans by its statistics, which autovacuum refreshes within about a minute of a bulk
  // load (its naptime); measured at once, the client calls ran on the empty tables' estimates (a
  // nested loop re-running the edge router subquery per router: 4.4 ms where 0.6 with statistics).
  // Its first pass also vacuums the tables the load inserted into (PostgreSQL 13's insert threshold):
  // done here, it does not run in the background of the first timed calls.
  if (dbServer) await vacuumAnalyze(db);
  const measured = await measureCalls([server], [admin], m);
  const rss = peakRssMb(server.pid);
  const model = m.name === (process.env.BENCH_EXPORT_MODEL ?? 'large') ? await exportAndImport(server, admin, dbServer) : undefined;
  await stopServer(server);
  return { load, ...measured, rss, model, ...(dbServer && m.name === (process.env.BENCH_PAIR_MODEL ?? 'large') ? await twoControllers(dir, db, m) : {}) };
}

/** What autovacuum gives a database after its first minute. */
async function vacuumAnalyze(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('vacuum analyze');
  await client.end();
}

/** The same database behind two controllers, the client calls alternating between them. */
async function twoControllers(dir: string, db: string, m: Model) {
  // The second controller shares the first's PKI, as README's "Several controllers" says to set it up.
  const second = tempDir();
  fs.cpSync(path.join(dir, 'pki'), path.join(second, 'pki'), { recursive: true });
  const servers = [await startServer(dir, db), await startServer(second, db)];
  const admin = await Promise.all(servers.map((s) => login(s.url)));
  const { calls } = await measureCalls(servers, admin, m);
  await Promise.all(servers.map(stopServer));
  return { pair: calls };
}

/** The machine's limit for the same rows: identities inserted straight into a fresh store, 500 a transaction. */
async function rawInsertRate(dbServer: string | undefined, n: number) {
  const opened = await openDataDir(loadConfig({ dataDir: tempDir(), db: await database(dbServer), adminPassword: PASSWORD, hostnames: 'localhost' }, {}));
  const start = performance.now();
  await seedIdentities(opened.ctx.store.db, n);
  const rate = n / ((performance.now() - start) / 1000);
  await sql`select 1`.execute(opened.ctx.store.db);
  await opened.close();
  return rate;
}

/** Each database's results, for comparing PostgreSQL with SQLite (bench/goals.ts). */
export const measuredModels = new Map<string, Map<string, ModelResult>>();

export async function measureModels(dbServer: string | undefined, wanted = (process.env.BENCH_MODELS ?? 'small,medium,large').split(',')): Promise<Row[]> {
  const label = dbServer ? 'postgres' : 'sqlite';
  const results = new Map<string, Measured & { pair?: Record<string, Series> }>();
  for (const m of MODELS.filter((x) => wanted.includes(x.name))) results.set(m.name, await runModel(m, dbServer));
  const rows: Row[] = [];
  const small = results.get('small');
  for (const [name, r] of results) {
    const m = MODELS.find((x) => x.name === name)!;
    rows.push([
      `[${label}] ${name} model: load through the API (${CONCURRENCY} at once)`,
      `${r.load.total.toFixed(1)} s (identities ${r.load.identities.toFixed(1)} s = ${(m.identities / r.load.identities).toFixed(0)}/s, policies ${r.load.policies.toFixed(1)} s)  peak RSS ${r.rss.toFixed(0)} MB`,
      '-',
    ]);
    for (const c of CALLS) {
      const s = r.calls[c];
      const ratio = small && name !== 'small' ? `p99 ${(s.p99 / small.calls[c].p99).toFixed(1)}x small` : '-';
      const what = c.startsWith('client service list') ? `${c}, ${r.visible.services} visible` : c.startsWith('its edge') ? `${c}, ${r.visible.routers} visible` : c;
      rows.push([`[${label}] ${name}: ${what}`, fmtSeries(s), ratio]);
    }
    if (r.model) {
      const x = r.model;
      rows.push([`[${label}] ${name} model: export (GET /export, ${(x.bytes / 1048576).toFixed(0)} MB of JSON)`, `${x.exportS.toFixed(1)} s  peak RSS ${x.exportRss.toFixed(0)} MB (the controller, load included)`, '-']);
      rows.push([`[${label}] ${name} model: import into an empty controller (${x.created} creates, one transaction)`, `${x.importS.toFixed(1)} s  peak RSS ${x.importRss.toFixed(0)} MB`, '-']);
    }
    if (r.pair) for (const c of CALLS) rows.push([`[${label}] ${name}, two controllers: ${c}`, fmtSeries(r.pair[c]), `p99 ${(r.pair[c].p99 / r.calls[c].p99).toFixed(1)}x one`]);
  }
  measuredModels.set(label, results);
  rows.push(...goalRows(label, results));
  const large = results.get('large') ?? results.get('medium') ?? small;
  if (large) {
    const n = MODELS.find((x) => results.get(x.name) === large)!.identities;
    const raw = await rawInsertRate(dbServer, Math.min(n, 20_000));
    rows.push([`[${label}] identities inserted straight into the store (machine limit)`, `${raw.toFixed(0)}/s`, `API creates at ${((n / large.load.identities) / raw * 100).toFixed(0)}%`]);
  }
  return rows;
}
