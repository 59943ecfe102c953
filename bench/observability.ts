// What metrics and events cost the hot paths (issue 28's bench rule): the client service list and
// session create on OpenZiti's Medium model, p99 within 10% of the same controller with them off.
// One model is loaded through the API once and copied, so both controllers hold the same data; then
// one runs with metrics on, an events file and a live SSE subscriber (and is scraped between rounds,
// as Prometheus would), the other with --no-metrics and no events file. The measures alternate
// between the two request by request (one to each, the order swapped every pair), so the machine's
// noise (other work on a shared machine) falls on both alike: rounds of a second or more did not do
// that here, two identical controllers measured in rounds differed by up to 1.7x at p50.
//   BENCH_OBS_SECONDS=30 (a call)  BENCH_OBS_MODEL=medium
//   BENCH_OBS_BASELINE=1: both controllers off, to see the measure's own noise (the ratio should be ~1)
//   BENCH_OBS_PARTS=metrics,events,subscriber (default): what the observed controller has on
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { call, database, fmtSeries, login, ok, series, startServer, stopServer, tempDir, type Series, type Server } from './http.js';
import { loadModel, MODELS } from './models.js';

type Row = [string, string, string];
const C = '/edge/client/v1';
const SECONDS = Number(process.env.BENCH_OBS_SECONDS ?? 30);
/** A scrape of the observed controller this often (Prometheus' default interval is 15 s or more). */
const SCRAPE_EVERY_MS = 5000;
const LIMIT = 1.1;
const BASELINE = !!process.env.BENCH_OBS_BASELINE;
const PARTS = (process.env.BENCH_OBS_PARTS ?? 'metrics,events,subscriber').split(',');

/** The live stream an operator's `ztc events --follow` holds: every event, read and dropped. */
function subscribe(url: string, token: string) {
  let events = 0;
  const req = https.request(`${url}/edge/management/v1/events`, { rejectUnauthorized: false, agent: false, headers: { 'zt-session': token, accept: 'text/event-stream' } }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (c: string) => void (events += c.split('\ndata: ').length - 1));
  });
  req.on('error', () => {});
  req.end();
  return { count: () => events, close: () => req.destroy() };
}

/** CPU time a process has used (user + system), ms, from /proc (Linux; NaN elsewhere). */
function cpuMs(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/**
 * The p99 ratio's 90% interval, by resampling the request pairs (each pair ran back to back, so it
 * keeps the noise both saw together): how far the measured ratio can be trusted on a noisy machine.
 */
function ratioInterval(on: number[], off: number[], rounds = 400): [number, number] {
  const n = Math.min(on.length, off.length);
  const p99 = (xs: Float64Array) => xs.sort()[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))];
  const ratios: number[] = [];
  const a = new Float64Array(n);
  const b = new Float64Array(n);
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < n; i++) {
      const k = Math.floor(Math.random() * n);
      a[i] = on[k];
      b[i] = off[k];
    }
    ratios.push(p99(a) / p99(b));
  }
  ratios.sort((x, y) => x - y);
  return [ratios[Math.floor(rounds * 0.05)], ratios[Math.floor(rounds * 0.95)]];
}

/** One request, timed: its time goes to `into`; answers whether it failed. */
async function timed(into: number[], f: () => Promise<number>) {
  const t = performance.now();
  const status = await f();
  into.push(performance.now() - t);
  return status < 200 || status >= 300 ? 1 : 0;
}

export async function observabilityRows(dbServer: string | undefined): Promise<Row[]> {
  const label = dbServer ? 'postgres' : 'sqlite';
  const m = MODELS.find((x) => x.name === (process.env.BENCH_OBS_MODEL ?? 'medium'))!;
  const dirOn = tempDir();
  const db = await database(dbServer);
  console.error(`… [${label}] observability: loading the ${m.name} model once through the API`);
  const loader = await startServer(dirOn, db, 'ztc-unobserved');
  await loadModel(loader.url, await login(loader.url), m);
  await stopServer(loader);
  // SQLite: a copy of the whole data dir. PostgreSQL: both on the one database (each measured alone), the PKI copied.
  const dirOff = tempDir();
  if (dbServer) fs.cpSync(path.join(dirOn, 'pki'), path.join(dirOff, 'pki'), { recursive: true });
  else fs.cpSync(dirOn, dirOff, { recursive: true });

  const on = await startServer(dirOn, db, BASELINE ? 'ztc-unobserved' : 'ztc-observed');
  const off = await startServer(dirOff, db, 'ztc-unobserved');
  const servers: { s: Server; name: string; probe: string; admin: string }[] = [];
  for (const [s, name] of [[on, 'on'], [off, 'off']] as const) servers.push({ s, name, probe: await login(s.url, 'zz-probe'), admin: await login(s.url) });
  const stream = PARTS.includes('subscriber') ? subscribe(on.url, servers[0].admin) : { count: () => -1, close: () => {} };
  try {
    const services = await ok(call(on.url, 'GET', `${C}/services?limit=500`, { token: servers[0].probe }), 'probe services');
    const dialable = services.data.find((s: { permissions: string[] }) => s.permissions.includes('Dial'));
    const calls = {
      'client service list': (x: (typeof servers)[number]) => call(x.s.url, 'GET', `${C}/services?limit=500`, { token: x.probe }).then((r) => r.status),
      'session create': (x: (typeof servers)[number]) => call(x.s.url, 'POST', `${C}/sessions`, { token: x.probe, body: { serviceId: dialable.id, type: 'Dial' } }).then((r) => r.status),
    };
    const times: Record<string, Record<string, number[]>> = {};
    const cpu: Record<string, Record<string, number>> = {};
    const bad: Record<string, number> = { on: 0, off: 0 };
    for (const name of Object.keys(calls)) times[name] = { on: [], off: [] };
    // Warm-up (JIT, caches, the SQLite page cache), not counted.
    for (const f of Object.values(calls)) for (const x of servers) for (let i = 0; i < 50; i++) await f(x);
    console.error(`… [${label}] observability: ${SECONDS}s a call, alternating between the two controllers request by request`);
    for (const [name, f] of Object.entries(calls)) {
      // CPU time the controllers spend (scrapes and the events file's writes included): unlike latency,
      // it does not count the time another process held the CPU.
      const cpuBefore = servers.map((x) => cpuMs(x.s.pid));
      const end = performance.now() + SECONDS * 1000;
      let scraped = performance.now();
      for (let i = 0; performance.now() < end; i++) {
        for (const x of i % 2 ? [servers[1], servers[0]] : servers) bad[x.name] += await timed(times[name][x.name], () => f(x));
        // A scrape now and then, between requests, as Prometheus' come (not timed: it is not a hot path).
        if (!BASELINE && PARTS.includes('metrics') && performance.now() - scraped > SCRAPE_EVERY_MS) {
          await ok(call(on.url, 'GET', '/metrics', { token: servers[0].admin }), 'scrape');
          scraped = performance.now();
        }
      }
      cpu[name] = Object.fromEntries(servers.map((x, i) => [x.name, (cpuMs(x.s.pid) - cpuBefore[i]) / times[name][x.name].length]));
    }
    if (!stream.count()) throw new Error('bench: the SSE subscriber heard no event: the observed controller is not emitting');
    const rows: Row[] = [];
    const state = BASELINE ? ['off (A)', 'off (B)'] : [`on (${PARTS.join(', ')})`, 'off'];
    for (const name of Object.keys(calls)) {
      const a: Series = series(times[name].on, 0);
      const b: Series = series(times[name].off, 0);
      const ratio = a.p99 / b.p99;
      const [low, high] = ratioInterval(times[name].on, times[name].off);
      const c = cpu[name];
      rows.push([`[${label}] ${m.name}: ${name}, ${state[0]} (${a.n} calls)`, `${fmtSeries(a)}  CPU ${c.on.toFixed(2)} ms a call`, '-']);
      rows.push([`[${label}] ${m.name}: ${name}, ${state[1]} (${b.n} calls)`, `${fmtSeries(b)}  CPU ${c.off.toFixed(2)} ms a call`, '-']);
      // Holds: the p99 measured is within 10%. Over it, the interval says whether that is the machine's noise.
      const verdict = ratio <= LIMIT ? 'within 10%: holds' : low <= LIMIT ? 'over 10%, within the noise (interval reaches 1.10)' : 'OVER 10%: fails';
      rows.push([`[${label}] ${m.name}: ${name}, ${BASELINE ? 'A/B' : 'on/off'}`, `p50 ${(a.p50 / b.p50).toFixed(2)}x  p99 ${ratio.toFixed(2)}x (90% interval ${low.toFixed(2)}-${high.toFixed(2)})  CPU ${(c.on / c.off).toFixed(2)}x`, verdict]);
    }
    if (stream.count() >= 0) rows.push([`[${label}] ${m.name}: events the live subscriber received`, `${stream.count()}${bad.on + bad.off ? `  errors on ${bad.on}, off ${bad.off}` : ''}`, '-']);
    return rows;
  } finally {
    stream.close();
    await Promise.all([stopServer(on), stopServer(off)]);
  }
}
