// npm run bench: throughput of the controller's hot paths beside what the machine can do at all,
// on SQLite and (when a PostgreSQL server is available, see scripts/with-postgres.sh) on PostgreSQL.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { cleanup, database, stopServer, type Server } from './http.js';
import { loadConfig } from '../src/config.js';
import { hashPassword } from '../src/model/auth/password.js';
import { openDataDir } from '../src/server/controller.js';
import { measureCliStartup } from './cli-startup.js';
import { modelRows, scaleRows } from './scale.js';
import { relayRows } from './relay.js';
import { ctrlRows } from './ctrl.js';
import { accessLossRows } from './access-loss.js';
import { rdmRows } from './rdm.js';
import { importLatencyRows } from './import-latency.js';
import { observabilityRows } from './observability.js';
import { seedIdentities, seedServices, SEEDED_ATTRS } from './seed.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const IDENTITIES = Number(process.env.BENCH_IDENTITIES ?? 100_000);
const SERVICES = Number(process.env.BENCH_SERVICES ?? 2_000);
const POLICIES = Number(process.env.BENCH_POLICIES ?? 40);
const PASSWORD = 'bench-password';
const children: ChildProcess[] = [];
const dirs: string[] = [];
let nextPort = 18000 + Math.floor(Math.random() * 1000);

const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-bench-'));
  dirs.push(d);
  return d;
};

const byUrl = new Map<string, Server>();
/**
 * Stops a server once its rows are measured: left running (idle controllers wake a few times a second,
 * two of them with 100,000 identities), they shared the cores with every later row.
 */
const stop = (url: string) => stopServer(byUrl.get(url)!);
/** Resident memory of a server process, from /proc (Linux), in MB. */
const rssMb = (url: string) => {
  try {
    const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${byUrl.get(url)?.pid}/status`, 'utf8'))?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return NaN;
  }
};

async function server(kind: 'hello' | 'ztc' | 'ztc-limited', dir: string, db = ''): Promise<string> {
  const port = nextPort++;
  const child = spawn(process.execPath, [path.join(here, 'server.js'), kind, String(port), dir, db], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.on('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  const url = `https://127.0.0.1:${port}`;
  byUrl.set(url, { url, pid: child.pid!, child });
  return url;
}

async function load(url: string, o: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; connections?: number } = {}) {
  const result = await autocannon({
    url, method: o.method ?? 'GET', headers: o.headers, body: o.body, connections: o.connections ?? 20, duration: SECONDS,
    // The certificate is ours; skip verification in the load generator only.
    tlsOptions: { rejectUnauthorized: false },
  } as autocannon.Options);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, bad: result.non2xx + result.errors + result.timeouts };
}

async function hashesPerSecond(): Promise<number> {
  const start = Date.now();
  let n = 0;
  const worker = async () => {
    while (Date.now() - start < SECONDS * 1000) {
      await hashPassword(PASSWORD);
      n++;
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return n / ((Date.now() - start) / 1000);
}

function fetchToken(base: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${base}/edge/client/v1/authenticate?method=password`, { method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => resolve(JSON.parse(t).data.token));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ username: 'admin', password: PASSWORD }));
  });
}

type Row = [string, string, string];
const fmt = (n: number) => n.toFixed(n < 100 ? 1 : 0);
const line = (r: { rps: number; p50: number; p99: number; bad: number }, unit = 'req/s') => `${fmt(r.rps)} ${unit}  p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.bad}`;

const LIST_FILTERS = [
  'tags.env = "prod" and not disabled sort by name desc',
  'name contains "user-09" sort by name skip 20 limit 25',
  'anyOf(roleAttributes) = "eu" and createdAt > datetime(2020-01-01T00:00:00Z) sort by createdAt desc',
  'tags.shard = "3" and anyOf(roleAttributes) = "web" sort by name',
  'sort by name desc',
];

async function measureController(label: string, dbServer: string | undefined, base: { hello: number; hashes: number }): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = tempDir();
  const db = await database(dbServer);
  const url = await server('ztc', dir, db);
  const token = await fetchToken(url);
  const ci = await load(`${url}/edge/client/v1/current-identity`, { headers: { 'zt-session': token } });
  rows.push([`[${label}] GET /current-identity (authenticated)`, line(ci), (ci.rps / base.hello).toFixed(2)]);
  const logins = await load(`${url}/edge/client/v1/authenticate?method=password`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: PASSWORD }), connections: 8,
  });
  rows.push([`[${label}] password logins`, line(logins, 'logins/s'), (logins.rps / base.hashes).toFixed(2)]);
  rows.push(...(await measureFlood(label, dbServer, base)));
  rows.push(...(await measureMixed(label, url, token, base)));

  // A filtered, sorted, paginated list over many identities, on a second controller; one connection,
  // so p50/p99 are the latency of one request rather than queueing.
  const bigDir = tempDir();
  const bigDb = await database(dbServer);
  const opened = await openDataDir(loadConfig({ dataDir: bigDir, db: bigDb, adminPassword: PASSWORD, hostnames: 'localhost' }, {}));
  await seedIdentities(opened.ctx.store.db, IDENTITIES, (d) => d % 25_000 === 0 && console.error(`… [${label}] seeded ${d} identities`));
  await seedServices(opened.ctx.store.db, SERVICES);
  // Fresh statistics after a bulk load, as autovacuum (PostgreSQL) or PRAGMA optimize would give.
  await sql`analyze`.execute(opened.ctx.store.db);
  await opened.close();
  const bigUrl = await server('ztc', bigDir, bigDb);
  const bigToken = await fetchToken(bigUrl);
  for (const f of LIST_FILTERS) {
    const r = await load(`${bigUrl}/edge/management/v1/identities?filter=${encodeURIComponent(f)}&limit=25&offset=50`, { headers: { 'zt-session': bigToken }, connections: 1 });
    rows.push([`[${label}] list of ${IDENTITIES}: ${f.length > 44 ? f.slice(0, 43) + '…' : f}`, line(r), (r.rps / base.hello).toFixed(3)]);
  }
  rows.push(...(await measurePolicies(label, bigUrl, bigToken, base)));
  await Promise.all([stop(url), stop(bigUrl)]);
  return rows;
}

function call(base: string, method: string, p: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${base}${p}`, { method, rejectUnauthorized: false, headers: { 'zt-session': token, ...(body ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: t ? JSON.parse(t) : undefined }));
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

/** Wall time of sequential writes, as a throughput row. */
async function timed(n: number, f: (i: number) => Promise<void>) {
  const start = performance.now();
  const each: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f(i);
    each.push(performance.now() - t);
  }
  each.sort((a, b) => a - b);
  return { rps: n / ((performance.now() - start) / 1000), p50: Math.round(each[Math.floor(n / 2)]), p99: Math.round(each[Math.floor(n * 0.99)]), bad: 0 };
}

/**
 * Policies over the big data set: each service policy selects an attribute's identities (a quarter of
 * them) and services; what a client sees is then read from the denormalised membership.
 */
async function measurePolicies(label: string, url: string, token: string, base: { hello: number }): Promise<Row[]> {
  const rows: Row[] = [];
  const M = '/edge/management/v1';
  const ok = async (r: Promise<{ status: number; body: any }>) => {
    const res = await r;
    if (res.status >= 300) throw new Error(`bench setup: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const created = await timed(POLICIES, async (i) => {
    const a = SEEDED_ATTRS[i % SEEDED_ATTRS.length];
    await ok(call(url, 'POST', `${M}/service-policies`, token, { name: `sp-${i}`, type: i % 2 ? 'Bind' : 'Dial', semantic: 'AnyOf', identityRoles: [`#${a}`], serviceRoles: [`#${SEEDED_ATTRS[(i + 1) % SEEDED_ATTRS.length]}`] }));
  });
  rows.push([`[${label}] create a service policy over ~${IDENTITIES / 4} identities`, line(created, 'writes/s'), '-']);
  await ok(call(url, 'POST', `${M}/edge-router-policies`, token, { name: 'all', semantic: 'AnyOf', identityRoles: ['#all'], edgeRouterRoles: ['#all'] }));
  const user = await ok(call(url, 'POST', `${M}/identities`, token, { name: 'bench-user', type: 'User', isAdmin: false, roleAttributes: ['web', 'eu'] }));
  await ok(call(url, 'POST', `${M}/authenticators`, token, { identityId: user.data.id, method: 'updb', username: 'bench-user', password: PASSWORD }));
  const userToken = await new Promise<string>((resolve, reject) => {
    const req = https.request(`${url}/edge/client/v1/authenticate?method=password`, { method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => resolve(JSON.parse(t).data.token));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ username: 'bench-user', password: PASSWORD }));
  });
  const visible = (await ok(call(url, 'GET', '/edge/client/v1/services?limit=1', userToken))).meta.pagination.totalCount;
  const r = await load(`${url}/edge/client/v1/services?limit=25&configTypes=all`, { headers: { 'zt-session': userToken }, connections: 1 });
  rows.push([`[${label}] client services (${visible} of ${SERVICES} visible, ${POLICIES} policies)`, line(r), (r.rps / base.hello).toFixed(3)]);
  const retag = await timed(20, async (i) => {
    await ok(call(url, 'PATCH', `${M}/identities/${user.data.id}`, token, { roleAttributes: [SEEDED_ATTRS[i % 8], SEEDED_ATTRS[(i + 3) % 8]] }));
  });
  rows.push([`[${label}] change an identity's role attributes`, line(retag, 'writes/s'), '-']);
  const repolicy = await timed(10, async (i) => {
    const sp = (await ok(call(url, 'GET', `${M}/service-policies?filter=${encodeURIComponent(`name = "sp-${i % POLICIES}"`)}`, token))).data[0].id;
    await ok(call(url, 'PATCH', `${M}/service-policies/${sp}`, token, { identityRoles: [`#${SEEDED_ATTRS[(i + 2) % 8]}`] }));
  });
  rows.push([`[${label}] re-target a service policy (~${IDENTITIES / 4} identities)`, line(repolicy, 'writes/s'), '-']);
  return rows;
}

/** One client's latency, sequential requests from another loopback address than the flood's. */
async function probeLatency(url: string, token: string, seconds: number) {
  const times: number[] = [];
  let bad = 0;
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const t = performance.now();
    const status = await new Promise<number>((resolve) => {
      const req = https.request(`${url}/edge/client/v1/current-identity`, { localAddress: '127.0.0.2', rejectUnauthorized: false, agent: false, headers: { 'zt-session': token } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.end();
    });
    times.push(performance.now() - t);
    if (status !== 200) bad++;
  }
  times.sort((a, b) => a - b);
  return { rps: times.length / seconds, p50: Math.round(times[Math.floor(times.length / 2)]), p99: Math.round(times[Math.floor(times.length * 0.99)]), bad };
}

/**
 * A login flood from one address against a controller limiting logins to 30 a minute per address: the flooder gets 429s,
 * while another client (another address) keeps its latency.
 */
async function measureFlood(label: string, dbServer: string | undefined, base: { hello: number }): Promise<Row[]> {
  const url = await server('ztc-limited', tempDir(), await database(dbServer));
  const token = await fetchToken(url);
  const quiet = await probeLatency(url, token, SECONDS);
  const [flood, during] = await Promise.all([
    autocannon({ url: `${url}/edge/client/v1/authenticate?method=password`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'wrong-password' }), connections: 20, duration: SECONDS, tlsOptions: { rejectUnauthorized: false } } as autocannon.Options),
    probeLatency(url, token, SECONDS),
  ]);
  const limited = (flood as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats?.['429']?.count ?? 0;
  await stop(url);
  return [
    [`[${label}] login flood from one address (429s)`, `${flood.requests.total} requests, ${limited} answered 429`, '-'],
    [`[${label}] another client, quiet`, line(quiet), (quiet.rps / base.hello).toFixed(3)],
    [`[${label}] another client, during the flood`, line(during), (during.rps / base.hello).toFixed(3)],
  ];
}

/**
 * Sustained mixed load (reads, lists, writes) in three equal rounds: errors must stay 0, and memory
 * must level off after the first round (warm-up: JIT, caches) rather than grow with every round.
 */
async function measureMixed(label: string, url: string, token: string, base: { hello: number }): Promise<Row[]> {
  const rss = [rssMb(url)];
  let n = 0;
  const rows: Row[] = [];
  for (let round = 1; round <= 3; round++) {
    const result = await autocannon({
      url, connections: 16, duration: SECONDS * 2, tlsOptions: { rejectUnauthorized: false },
      headers: { 'zt-session': token, 'content-type': 'application/json' },
      requests: [
        { method: 'GET', path: '/edge/client/v1/current-identity' },
        { method: 'GET', path: '/edge/management/v1/identities?limit=25&filter=' + encodeURIComponent('name contains "mix" sort by name') },
        { method: 'GET', path: '/edge/client/v1/services?limit=25' },
        { method: 'POST', path: '/edge/management/v1/identities', setupRequest: (req: Record<string, unknown>) => ({ ...req, body: JSON.stringify({ name: `mix-${process.pid}-${n++}`, type: 'Device', isAdmin: false, roleAttributes: ['mix'] }) }) },
      ],
    } as autocannon.Options);
    rss.push(rssMb(url));
    const r = { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, bad: result.non2xx + result.errors + result.timeouts };
    rows.push([`[${label}] sustained mixed load, round ${round} (RSS ${rss[round - 1].toFixed(0)} → ${rss[round].toFixed(0)} MB)`, line(r), (r.rps / base.hello).toFixed(3)]);
  }
  return rows;
}

try {
  console.error(`ztc benchmarks: ${os.cpus().length} cores, ${SECONDS}s per measure`);
  // BENCH_ONLY=relay|ctrl|access|rdm|cli: only the embedded router's, the control channel's, access loss's, the
  // router data model's (2.x routers at scale, bench/rdm.ts) or the CLI's start-up rows (a quick look while working on one).
  const only = { relay: relayRows, ctrl: ctrlRows, access: accessLossRows, rdm: rdmRows, cli: measureCliStartup }[process.env.BENCH_ONLY ?? ''];
  if (only) {
    const rows = await only().finally(cleanup);
    const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length))];
    for (const r of rows) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2]}`);
    process.exit(0);
  }
  // BENCH_ONLY=models: only OpenZiti's scale models and the client calls' goals (issue 31), SQLite then PostgreSQL.
  if (process.env.BENCH_ONLY === 'models') {
    const rows = await modelRows(process.env.ZTC_TEST_DB);
    const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length))];
    for (const r of rows) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2]}`);
    process.exit(0);
  }
  // BENCH_ONLY=import: only a large import beside another client's latency (issue 26, item 2).
  if (process.env.BENCH_ONLY === 'import') {
    // BENCH_IMPORT_COMPARE=1: first with the creates on the API thread (as before the import's own thread), then as now.
    const rows = process.env.BENCH_IMPORT_COMPARE ? await importLatencyRows(undefined, 'API thread') : [];
    // BENCH_IMPORT_SQLITE=0: PostgreSQL's only (with ZTC_TEST_DB).
    if (process.env.BENCH_IMPORT_SQLITE !== '0') rows.push(...(await importLatencyRows(undefined)));
    if (process.env.ZTC_TEST_DB) rows.push(...(await importLatencyRows(process.env.ZTC_TEST_DB)));
    const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length))];
    for (const r of rows) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2]}`);
    process.exit(0);
  }
  // BENCH_ONLY=observability: only metrics and events on beside off (issue 28's bench rule), SQLite and, when at hand, PostgreSQL.
  if (process.env.BENCH_ONLY === 'observability') {
    const rows = await observabilityRows(undefined);
    if (process.env.ZTC_TEST_DB) rows.push(...(await observabilityRows(process.env.ZTC_TEST_DB)));
    cleanup();
    const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length))];
    for (const r of rows) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2]}`);
    process.exit(0);
  }
  const helloUrl = await server('hello', tempDir());
  const hello = await load(`${helloUrl}/`);
  await stop(helloUrl);
  const hashes = await hashesPerSecond();
  const rows: Row[] = [
    ['bare fastify hello world (HTTPS)', line(hello), '1.00'],
    ['raw scrypt hashes (4 parallel)', `${fmt(hashes)} hashes/s`, '1.00'],
  ];
  rows.push(...(await measureCliStartup()));
  const base = { hello: hello.rps, hashes };
  rows.push(...(await measureController('sqlite', undefined, base)));
  if (process.env.ZTC_TEST_DB) rows.push(...(await measureController('postgres', process.env.ZTC_TEST_DB, base)));
  else console.error('(no PostgreSQL server: run `npm run bench` as root or with PostgreSQL installed to add its figures)');
  rows.push(...(await scaleRows(process.env.ZTC_TEST_DB)));
  rows.push(...(await relayRows()));
  rows.push(...(await accessLossRows()));
  rows.push(...(await ctrlRows()));
  rows.push(...(await rdmRows()));
  rows.push(...(await importLatencyRows(undefined)));
  rows.push(...(await observabilityRows(undefined)));

  const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length))];
  console.log(`${'measure'.padEnd(w[0])}  ${'result'.padEnd(w[1])}  ratio to baseline`);
  for (const r of rows) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2]}`);
} finally {
  for (const c of children) c.kill('SIGTERM');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  cleanup();
}
