// Shared pieces of the model and burst benchmarks (bench/models.ts, bench/burst.ts): controller
// processes, JSON calls over HTTPS with a keep-alive agent, latency series, databases, peak memory.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const here = path.dirname(fileURLToPath(import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];
let nextPort = 19000 + Math.floor(Math.random() * 1000);

export const PASSWORD = 'bench-password';

export interface Server {
  url: string;
  pid: number;
  child: ChildProcess;
  /** Where routers' control channels connect (bench/server.ts says). */
  ctrlPort?: number;
}

export function tempDir() {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-bench-'));
  dirs.push(d);
  return d;
}

/** A controller in its own process (bench/server.ts), without rate limits unless `kind` asks. */
export async function startServer(dir: string, db = '', kind: 'ztc' | 'ztc-limited' | 'ztc-observed' | 'ztc-unobserved' = 'ztc'): Promise<Server> {
  const port = nextPort++;
  // BENCH_NODE_OPTIONS: extra node flags for the controllers, e.g. --cpu-prof to see where their time goes.
  const flags = (process.env.BENCH_NODE_OPTIONS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...flags, path.join(here, 'server.js'), kind, String(port), dir, db], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  // Its log, kept after the run (the data dir is not) for when a figure or a failure needs explaining.
  const log = fs.createWriteStream(path.join(os.tmpdir(), `ztc-bench-server-${port}.log`));
  child.stdout!.pipe(log);
  const ready = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve(d.toString()));
    child.on('exit', (code) => reject(new Error(`controller exited with ${code}`)));
  });
  const ports = JSON.parse(/ready (\{.*\})/.exec(ready)?.[1] ?? '{}') as { ctrlPort?: number };
  return { url: `https://127.0.0.1:${port}`, pid: child.pid!, child, ctrlPort: ports.ctrlPort };
}

export async function stopServer(s: Server) {
  if (s.child.exitCode !== null) return;
  const gone = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await gone;
}

export function cleanup() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
}

/** Peak resident memory of a process (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return NaN;
  }
}

/** A fresh database on the PostgreSQL server, or '' for SQLite. */
export async function database(server?: string): Promise<string> {
  if (!server) return '';
  const name = `ztc_bench_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  const u = new URL(server);
  u.pathname = `/${name}`;
  return u.toString();
}

const agent = new https.Agent({ keepAlive: true, maxSockets: 64, rejectUnauthorized: false });
const agents = new Map<string, https.Agent>();
/** Kept-alive connections from one loopback address: another client, as the per-address limits see it. */
const agentFrom = (localAddress: string) => {
  let a = agents.get(localAddress);
  if (!a) agents.set(localAddress, (a = new https.Agent({ keepAlive: true, maxSockets: 64, rejectUnauthorized: false, localAddress } as https.AgentOptions)));
  return a;
};

export interface Reply {
  status: number;
  body: any;
}

const headersOf = (o: { token?: string; body?: unknown }): Record<string, string> => ({ ...(o.token ? { 'zt-session': o.token } : {}), ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}) });

/** One JSON request; `localAddress` makes it come from another loopback address. */
export function call(base: string, method: string, p: string, o: { token?: string; body?: unknown; localAddress?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${base}${p}`, { method, headers: headersOf(o), agent: o.localAddress ? agentFrom(o.localAddress) : agent }, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => {
        let body: unknown;
        try {
          body = t ? JSON.parse(t) : undefined;
        } catch {
          body = t;
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end(o.body !== undefined ? JSON.stringify(o.body) : undefined);
  });
}

/**
 * The same request for timing: its answer read to the last byte and dropped, only the status kept.
 * Keeping and parsing the body put the client's own work into the timings: after loading the Large
 * model, the bench's process ran a full garbage collection about every quarter second while it timed
 * the 200-service list (pauses of 2-11 ms; p99 22 ms in-process where a fresh process measured 10-11),
 * and parsing each answer's JSON counted as the server's time.
 */
export function timedCall(base: string, method: string, p: string, o: { token?: string; body?: unknown } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${base}${p}`, { method, headers: headersOf(o), agent }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(o.body !== undefined ? JSON.stringify(o.body) : undefined);
  });
}

/** The call's body, or an error naming what failed (bench setup must not fail quietly). */
export async function ok(r: Promise<Reply>, what: string): Promise<any> {
  const res = await r;
  if (res.status >= 300) throw new Error(`bench: ${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function login(base: string, username = 'admin', password = PASSWORD): Promise<string> {
  return (await ok(call(base, 'POST', '/edge/client/v1/authenticate?method=password', { body: { username, password } }), `login ${username}`)).data.token;
}

/** Run `tasks` with at most `concurrency` in flight, like an operator's script with parallel creates. */
export async function concurrently<T>(items: T[], concurrency: number, f: (item: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await f(items[i], i);
    }
  }));
}

export interface Series {
  n: number;
  p50: number;
  p99: number;
  bad: number;
  /** A sequential series: its length in seconds, and how many of its calls took over 1 ms. */
  seconds?: number;
  overOneMs?: number;
}

/** The q-quantile of times sorted ascending (NaN for none). */
export const quantileOfSorted = (t: readonly number[], q: number) => (t.length ? t[Math.min(t.length - 1, Math.floor(t.length * q))] : NaN);

export function series(times: number[], bad = 0): Series {
  const t = [...times].sort((a, b) => a - b);
  return { n: t.length, p50: quantileOfSorted(t, 0.5), p99: quantileOfSorted(t, 0.99), bad };
}

/** Latency of one request after another for `seconds` (no queueing in the client: one at a time). */
export async function sequential(seconds: number, f: () => Promise<number>, o: { min?: number; until?: () => boolean } = {}): Promise<Series> {
  const times: number[] = [];
  let bad = 0;
  const start = performance.now();
  const end = Date.now() + seconds * 1000;
  while ((o.until ? !o.until() : Date.now() < end) || times.length < (o.min ?? 0)) {
    const t = performance.now();
    const status = await f();
    times.push(performance.now() - t);
    if (status < 200 || status >= 300) bad++;
  }
  return { ...series(times, bad), seconds: (performance.now() - start) / 1000, overOneMs: times.filter((t) => t > 1).length };
}

/**
 * One request every `everyMs` on a fixed schedule until `until()`, each timed from when it was due:
 * a call held up delays the next, and that wait counts too (no coordinated omission). Where
 * `sequential` counts calls (thousands a second while the server is idle, a handful during a stall),
 * this samples moments, so its p99 is the wait at a random instant.
 */
export async function onSchedule(everyMs: number, f: () => Promise<number>, until: () => boolean): Promise<Series> {
  const times: number[] = [];
  let bad = 0;
  const start = performance.now();
  for (let i = 0; !until(); i++) {
    const due = start + i * everyMs;
    const now = performance.now();
    if (now < due) await new Promise((r) => setTimeout(r, due - now));
    const status = await f();
    times.push(performance.now() - due);
    if (status < 200 || status >= 300) bad++;
  }
  return series(times, bad);
}

export const ms = (n: number) => (Number.isNaN(n) ? '-' : n < 10 ? n.toFixed(1) : n.toFixed(0));
export const fmtSeries = (s: Series) => `p50 ${ms(s.p50)} ms  p99 ${ms(s.p99)} ms${s.bad ? `  errors ${s.bad}` : ''}`;
