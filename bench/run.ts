// npm run bench: throughput of the controller's hot paths beside what the machine can do at all.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { hashPassword } from '../src/model/auth/password.js';
import { loadConfig } from '../src/config.js';
import { openDataDir } from '../src/server/controller.js';
import { seedIdentities } from './seed.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-bench-'));
const children: ChildProcess[] = [];
let nextPort = 18000 + Math.floor(Math.random() * 1000);

async function server(kind: 'hello' | 'ztc', dir = dataDir): Promise<string> {
  const port = nextPort++;
  const child = spawn(process.execPath, [path.join(here, 'server.js'), kind, String(port), dir], { stdio: ['ignore', 'pipe', 'inherit'] });
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
  const bad = result.non2xx + result.errors + result.timeouts;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, bad };
}

async function hashesPerSecond(): Promise<number> {
  const start = Date.now();
  let n = 0;
  const worker = async () => {
    while (Date.now() - start < SECONDS * 1000) {
      await hashPassword('bench-password');
      n++;
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return n / ((Date.now() - start) / 1000);
}

const rows: [string, string, string][] = [];
const fmt = (n: number) => n.toFixed(n < 100 ? 1 : 0);
try {
  console.error(`ztc benchmarks: ${os.cpus().length} cores, ${SECONDS}s per measure`);
  const hello = await server('hello');
  const h = await load(`${hello}/`);
  const ztc = await server('ztc');
  const auth = await fetchToken(ztc);
  const ci = await load(`${ztc}/edge/client/v1/current-identity`, { headers: { 'zt-session': auth } });
  rows.push(['bare fastify hello world (HTTPS)', `${fmt(h.rps)} req/s  p50 ${h.p50} ms  p99 ${h.p99} ms`, '1.00']);
  rows.push(['GET /current-identity (authenticated)', `${fmt(ci.rps)} req/s  p50 ${ci.p50} ms  p99 ${ci.p99} ms  errors ${ci.bad}`, (ci.rps / h.rps).toFixed(2)]);
  const hashes = await hashesPerSecond();
  const logins = await load(`${ztc}/edge/client/v1/authenticate?method=password`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'bench-password' }), connections: 8,
  });

  // A filtered, sorted, paginated list over 100k identities, in a second controller on its own data dir;
  // one connection, so p50/p99 are the latency of one request, not queueing.
  const big = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-bench-100k-'));
  const opened = await openDataDir(loadConfig({ dataDir: big, adminPassword: 'bench-password', hostnames: 'localhost' }, {}));
  const N = Number(process.env.BENCH_IDENTITIES ?? 100_000);
  await seedIdentities(opened.ctx.store.db, N, (d) => d % 20_000 === 0 && console.error(`… seeded ${d} identities`));
  await opened.close();
  const bigUrl = await server('ztc', big);
  const bigToken = await fetchToken(bigUrl);
  const filters = [
    'tags.env = "prod" and not disabled sort by name desc',
    'name contains "user-09" sort by name skip 20 limit 25',
    'anyOf(roleAttributes) = "eu" and createdAt > datetime(2020-01-01T00:00:00Z) sort by createdAt desc',
    'tags.shard = "3" and anyOf(roleAttributes) = "web" sort by name',
    'sort by name desc',
  ];
  for (const f of filters) {
    const r = await load(`${bigUrl}/edge/management/v1/identities?filter=${encodeURIComponent(f)}&limit=25&offset=50`, { headers: { 'zt-session': bigToken }, connections: 1 });
    rows.push([`list ${N} identities: ${f.slice(0, 48)}…`, `${fmt(r.rps)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.bad}`, (r.rps / h.rps).toFixed(3)]);
  }
  fs.rmSync(big, { recursive: true, force: true });
  rows.push(['raw scrypt hashes (4 parallel)', `${fmt(hashes)} hashes/s`, '1.00']);
  rows.push(['password logins', `${fmt(logins.rps)} logins/s  p50 ${logins.p50} ms  p99 ${logins.p99} ms  errors ${logins.bad}`, (logins.rps / hashes).toFixed(2)]);

  const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length))];
  console.log(`${'measure'.padEnd(w[0])}  ${'result'.padEnd(w[1])}  ratio`);
  for (const r of rows) console.log(`${r[0].padEnd(w[0])}  ${r[1].padEnd(w[1])}  ${r[2]}`);
} finally {
  for (const c of children) c.kill('SIGTERM');
  fs.rmSync(dataDir, { recursive: true, force: true });
}

async function fetchToken(base: string): Promise<string> {
  const https = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = https.request(`${base}/edge/client/v1/authenticate?method=password`, { method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => resolve(JSON.parse(t).data.token));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ username: 'admin', password: 'bench-password' }));
  });
}
