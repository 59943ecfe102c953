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
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { hashPassword } from '../src/model/auth/password.js';
import { openDataDir } from '../src/server/controller.js';
import { seedIdentities } from './seed.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const IDENTITIES = Number(process.env.BENCH_IDENTITIES ?? 100_000);
const PASSWORD = 'bench-password';
const children: ChildProcess[] = [];
const dirs: string[] = [];
let nextPort = 18000 + Math.floor(Math.random() * 1000);

const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-bench-'));
  dirs.push(d);
  return d;
};

async function server(kind: 'hello' | 'ztc', dir: string, db = ''): Promise<string> {
  const port = nextPort++;
  const child = spawn(process.execPath, [path.join(here, 'server.js'), kind, String(port), dir, db], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.on('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
  return `https://127.0.0.1:${port}`;
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

/** A fresh database on the PostgreSQL server, or '' for SQLite. */
async function database(server?: string): Promise<string> {
  if (!server) return '';
  const name = `ztc_bench_${Date.now().toString(36)}`;
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  const u = new URL(server);
  u.pathname = `/${name}`;
  return u.toString();
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

  // A filtered, sorted, paginated list over many identities, on a second controller; one connection,
  // so p50/p99 are the latency of one request rather than queueing.
  const bigDir = tempDir();
  const bigDb = await database(dbServer);
  const opened = await openDataDir(loadConfig({ dataDir: bigDir, db: bigDb, adminPassword: PASSWORD, hostnames: 'localhost' }, {}));
  await seedIdentities(opened.ctx.store.db, IDENTITIES, (d) => d % 25_000 === 0 && console.error(`… [${label}] seeded ${d} identities`));
  // Fresh statistics after a bulk load, as autovacuum (PostgreSQL) or PRAGMA optimize would give.
  await sql`analyze`.execute(opened.ctx.store.db);
  await opened.close();
  const bigUrl = await server('ztc', bigDir, bigDb);
  const bigToken = await fetchToken(bigUrl);
  for (const f of LIST_FILTERS) {
    const r = await load(`${bigUrl}/edge/management/v1/identities?filter=${encodeURIComponent(f)}&limit=25&offset=50`, { headers: { 'zt-session': bigToken }, connections: 1 });
    rows.push([`[${label}] list of ${IDENTITIES}: ${f.length > 44 ? f.slice(0, 43) + '…' : f}`, line(r), (r.rps / base.hello).toFixed(3)]);
  }
  return rows;
}

try {
  console.error(`ztc benchmarks: ${os.cpus().length} cores, ${SECONDS}s per measure`);
  const hello = await load(`${await server('hello', tempDir())}/`);
  const hashes = await hashesPerSecond();
  const rows: Row[] = [
    ['bare fastify hello world (HTTPS)', line(hello), '1.00'],
    ['raw scrypt hashes (4 parallel)', `${fmt(hashes)} hashes/s`, '1.00'],
  ];
  const base = { hello: hello.rps, hashes };
  rows.push(...(await measureController('sqlite', undefined, base)));
  if (process.env.ZTC_TEST_DB) rows.push(...(await measureController('postgres', process.env.ZTC_TEST_DB, base)));
  else console.error('(no PostgreSQL server: run `npm run bench` as root or with PostgreSQL installed to add its figures)');

  const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length))];
  console.log(`${'measure'.padEnd(w[0])}  ${'result'.padEnd(w[1])}  ratio to baseline`);
  for (const r of rows) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2]}`);
} finally {
  for (const c of children) c.kill('SIGTERM');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
}
