// 2.x routers at scale (issue 46 item 4): OpenZiti's Large model (200 services, 100,000 identities, 500
// edge routers, 250 service / 250 edge router / 100 service edge router policies) in a controller, then
//   (a) a newly connected 2.x test router (test/peers/ctrl-router.ts, written from the reference): from
//       its TLS connect and hello to its full DataState received and decoded, over a few connects;
//   (b) the model's 500 edge routers connected as 2.x test routers and subscribed: from an
//       administrator's change answering (a service policy created, an identity's role attributes
//       changed, a service updated) to the last of the 500 receiving the change set that carries it;
//   (c) the controller's RSS and CPU meanwhile, and an API client's latency (from a process of its own)
//       while the 500 connect and while some of them subscribe again at once with no model.
// The identities are written straight to the store (bench/seed.ts, as bench/models.ts names them and
// gives them role attributes); everything else goes through the API, so every policy's members are
// what the controller computed. SQLite. BENCH_ONLY=rdm runs this alone (about 2 minutes on a quiet
// 2-core machine).
//   BENCH_RDM_CONNECTS=5 connects timed in (a)   BENCH_RDM_CHANGES=3 rounds of the three changes in (b)
//   BENCH_RDM_IDENTITIES=100000   BENCH_RDM_ROUTERS=500 (the model's; also how many connect in (b))
//   BENCH_RDM_FRESH=50: that many of the connected routers then subscribe again at once with no model
//   (as after a controller restart): until the last has its DataState, and the API's latency meanwhile
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { decode, encode } from '../src/fabric/channel/protobuf.js';
import { Schemas } from '../src/fabric/ctrl/messages.js';
import { openDataDir } from '../src/server/controller.js';
import { connectRouter2x, enrollRouter, i32, RdmSchemas, T, T2, type EnrolledRouter } from '../test/peers/ctrl-router.js';
import type { EdgePeer, Frame } from '../test/peers/edge-sdk.js';
import { call, concurrently, login, ok, PASSWORD, peakRssMb, startServer, stopServer, tempDir } from './http.js';
import { loadModel, MODELS } from './models.js';
import { seedIdentities } from './seed.js';

type Row = [string, string, string];
const M = '/edge/management/v1';
const LARGE = MODELS.find((m) => m.name === 'large')!;
const IDENTITIES = Number(process.env.BENCH_RDM_IDENTITIES ?? LARGE.identities);
const ROUTERS = Number(process.env.BENCH_RDM_ROUTERS ?? LARGE.routers);
const CONNECTS = Number(process.env.BENCH_RDM_CONNECTS ?? 5);
const CHANGES = Number(process.env.BENCH_RDM_CHANGES ?? 3);
const FRESH = Number(process.env.BENCH_RDM_FRESH ?? 50);
/** The issue's goals: the whole model to a new router, a change to every router. */
const FULL_GOAL_S = 5;
const CHANGE_GOAL_S = 1;
const pad = (i: number) => String(i).padStart(6, '0');
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const s = (ms: number) => (ms / 1000).toFixed(2);
const mb = (bytes: number) => (bytes / 1048576).toFixed(1);
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
/** CPU seconds a process has used (user + system), from /proc. */
const cpuS = (pid: number) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
const at = () => `load average ${os.loadavg()[0].toFixed(1)} on ${os.cpus().length} cores`;
const verdict = (ok: boolean, why: string) => (ok ? 'met' : `MISSED: ${why} (${at()})`);

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * An API client's latency (a page of the service list every 100 ms, each timed from when it was due)
 * from a process of its own (bench/probe.ts), so the 500 routers' traffic in this process does not count
 * as the controller's, and the calls themselves hardly load it: from now until stop() is called.
 */
function probe(base: string, token: string): { stop(): Promise<{ n: number; p50: number; p99: number }> } {
  const child = spawn(process.execPath, [path.join(here, 'probe.js'), base, token, '0', '100'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const done = new Promise<{ n: number; p50: number; p99: number }>((resolve) => child.on('exit', () => resolve(JSON.parse(out || '{"n":0,"p50":null,"p99":null}'))));
  return { stop: () => (child.stdin!.end(), done) };
}
const fmtProbe = (p: { n: number; p50: number; p99: number }) => `p50 ${p.p50?.toFixed(1)} ms, p99 ${p.p99?.toFixed(1)} ms (${p.n} calls)`;

/** A 2.x test router: answers the ServerHello as a router does, and keeps what the data model sends it. */
interface Router2x {
  p: EdgePeer;
  sub: string;
  /** Each DataState or change set for its subscription as it arrives (bench process's clock). */
  onModel?: (f: Frame, at: number) => void;
}

async function connect(port: number, r: EnrolledRouter, sub: string): Promise<Router2x> {
  const c = await connectRouter2x(port, r, { resultMs: 60_000 });
  if (c.result?.headers.get(2)?.[0] !== 1) {
    c.p.close();
    throw new Error(`bench: router ${r.name} refused: ${c.result?.body.toString() ?? 'no answer to its hello'}`);
  }
  const router: Router2x = { p: c.p, sub };
  c.p.onFrame = (f) => {
    if (f.type === T.ServerHello) {
      c.p.send(T.ClientHello, [[1, i32(f.seq)], [1024, Buffer.from([1])]], encode(Schemas.ClientHello, { version: 'v2.0.3', hostname: 'localhost', protocols: ['tls'], listeners: [] }));
    } else if ((f.type === T2.DataState || f.type === T2.DataStateChangeSet) && f.headers.get(1026)?.toString() === router.sub) {
      router.onModel?.(f, performance.now());
    }
    // Nothing is kept: 500 routers' inboxes would hold every API session and key sent them.
    return true;
  };
  return router;
}

const subscribe = (r: Router2x, o: { currentIndex?: bigint; timelineId?: string; renew?: boolean } = {}) =>
  r.p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { currentIndex: o.currentIndex ?? 0n, subscriptionDurationSeconds: 300, subscriptionId: r.sub, renew: !!o.renew, ...(o.timelineId ? { timelineId: o.timelineId } : {}) }));

const until = <T>(what: string, ms: number, f: (done: (v: T) => void) => void) =>
  new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`bench: ${what} did not come within ${ms / 1000} s`)), ms);
    f((v) => (clearTimeout(t), resolve(v)));
  });

export async function rdmRows(): Promise<Row[]> {
  const rows: Row[] = [];
  // Each row is said as soon as it is measured too (a later failure keeps it).
  const row = (r: Row) => (rows.push(r), console.error(`  ${r.filter(Boolean).join('  ')}`));
  const step = (what: string) => console.error(`… rdm bench: ${what} (${at()})`);
  const dir = tempDir();
  step(`seeding ${IDENTITIES} identities straight into the store`);
  const opened = await openDataDir(loadConfig({ dataDir: dir, db: '', adminPassword: PASSWORD, hostnames: 'localhost' }, {}));
  await seedIdentities(opened.ctx.store.db, IDENTITIES, () => {}, { name: (i) => `id-${pad(i)}`, roleAttributes: (i) => [`i${i % LARGE.servicePolicies}`], disabled: () => false });
  await sql`analyze`.execute(opened.ctx.store.db);
  await opened.close();
  const server = await startServer(dir);
  const base = server.url;
  const admin = await login(base);
  step('services and policies through the API');
  // The model's services and policies as bench/models.ts makes them (its identities are seeded, its routers enrolled below).
  await loadModel(base, admin, { ...LARGE, identities: 0, routers: 0 });
  const api = {
    api: (method: string, p: string, body?: unknown) => call(base, method, p.startsWith('/edge/') ? p : `${M}${p}`, { token: admin, body }),
    c: { call: async (method: string, p: string, o: { body: unknown }) => { const r = await call(base, method, p, o); return { ...r, text: JSON.stringify(r.body) }; } },
  };
  step(`${ROUTERS} edge routers enrolled`);
  const enrolled: EnrolledRouter[] = new Array(ROUTERS);
  await concurrently([...Array(ROUTERS).keys()], 8, async (i) => void (enrolled[i] = await enrollRouter(api, `er-${pad(i)}`, [`r${i % LARGE.routerPolicies}`])));
  const port = server.ctrlPort!;

  // (a) One router at a time: connect, hello, subscribe with no model; its DataState received, decoded.
  step('a new router gets the whole model');
  const totals: number[] = [];
  const afterSub: number[] = [];
  const decodeMs: number[] = [];
  let bytes = 0;
  let events = 0;
  let endIndex = 0n;
  let timelineId = '';
  for (let k = 0; k < CONNECTS; k++) {
    const t0 = performance.now();
    const r = await connect(port, enrolled[k], `full-${k}`);
    const got = until<[Frame, number]>('the DataState', 120_000, (done) => (r.onModel = (f, t) => f.type === T2.DataState && done([f, t])));
    const tSub = performance.now();
    subscribe(r);
    const [f, tRecv] = await got;
    const state = decode(RdmSchemas.DataState, f.body);
    const tDec = performance.now();
    totals.push(tDec - t0);
    afterSub.push(tRecv - tSub);
    decodeMs.push(tDec - tRecv);
    bytes = f.body.length;
    events = state.events.length;
    endIndex = state.endIndex;
    timelineId = state.timelineId;
    r.p.close();
    await r.p.whenClosed();
    // The controller sees it gone before the same router connects again later.
    await new Promise((res) => setTimeout(res, 300));
  }
  const fullP50 = pct(totals, 50);
  row([
    `[rdm] Large model (${IDENTITIES} identities) to a new 2.x router: connect + hello -> DataState decoded (${CONNECTS} connects, ${mb(bytes)} MB, ${events} events)`,
    `p50 ${s(fullP50)} s (each: ${totals.map(s).join(', ')} s; subscribe -> received p50 ${s(pct(afterSub, 50))} s, decode p50 ${s(pct(decodeMs, 50))} s)`,
    `goal < ${FULL_GOAL_S} s: ${verdict(Math.max(...totals) < FULL_GOAL_S * 1000, `slowest ${s(Math.max(...totals))} s`)}`,
  ]);

  // (b) Every router connected, each subscribed holding the latest model (as each is after its first DataState).
  step(`${ROUTERS} routers connect and subscribe`);
  const rssBefore = rssMb(server.pid);
  const routers: Router2x[] = new Array(ROUTERS);
  const quiet = probe(base, admin);
  await new Promise((r) => setTimeout(r, 3000));
  const beforeConnect = await quiet.stop();
  const probing = probe(base, admin);
  const tConnect = performance.now();
  // Each renews its subscription before its 300 s lease ends, as routers do (a slow start can outlast it).
  const renewals = setInterval(() => {
    for (const r of routers) if (r && !r.p.closed) subscribe(r, { renew: true });
  }, 240_000);
  // A router whose connection fails (reset, refused, no answer to its hello) tries again a second later, as routers do.
  let retries = 0;
  await concurrently([...Array(ROUTERS).keys()], 16, async (i) => {
    let r: Router2x | undefined;
    for (let attempt = 1; !r; attempt++) {
      r = await connect(port, enrolled[i], `sub-${i}`).catch((e) => {
        if (attempt >= 10) throw e;
        retries++;
        return new Promise<undefined>((res) => setTimeout(() => res(undefined), 1000));
      });
    }
    routers[i] = r;
    subscribe(r, { currentIndex: endIndex, timelineId });
  });
  const connectS = (performance.now() - tConnect) / 1000;
  const duringConnect = await probing.stop();
  // Whatever a subscription brings (nothing when the model has not moved) is in before the changes.
  await new Promise((r) => setTimeout(r, 2000));
  const rssConnected = rssMb(server.pid);
  row([`[rdm] ${ROUTERS} 2.x routers connect and subscribe (16 at once), holding the latest model`, `${connectS.toFixed(1)} s, ${retries} connects tried again; an API call (a page of services) meanwhile: ${fmtProbe(duringConnect)}; before, for 3 s: ${fmtProbe(beforeConnect)}`, '']);

  step('changes');
  const services = (await ok(api.api('GET', `/services?limit=500`), 'services')).data as { id: string; name: string }[];
  const someIdentities = (await ok(api.api('GET', `/identities?limit=${CHANGES}&filter=${encodeURIComponent('name contains "id-0"')}`), 'identities')).data as { id: string; roleAttributes: string[] }[];
  type Change = { kind: string; run: (k: number) => Promise<unknown>; carries: (e: Record<string, any>) => boolean };
  const changes = (k: number): Change[] => {
    const svc = services[k % services.length];
    const who = someIdentities[k % someIdentities.length];
    const identity = who.id;
    // Another policy's attribute than the one it has.
    let attr = (k * 13 + 5) % LARGE.servicePolicies;
    if (who.roleAttributes.includes(`i${attr}`)) attr = (attr + 1) % LARGE.servicePolicies;
    const name = `rdm-sp-${k}`;
    const renamed = `${svc.name}-r${k}`;
    return [
      {
        kind: 'a service policy created (400 identities, 1 service)',
        run: () => ok(api.api('POST', '/service-policies', { name, type: 'Dial', semantic: 'AnyOf', identityRoles: [`#i${(k * 7) % LARGE.servicePolicies}`], serviceRoles: [`#s${(k * 7) % LARGE.servicePolicies}`] }), 'policy'),
        carries: (e) => e.servicePolicy?.name === name,
      },
      {
        kind: "an identity's role attributes changed (it leaves one policy, joins another)",
        run: () => ok(api.api('PATCH', `/identities/${identity}`, { roleAttributes: [`i${attr}`] }), 'identity'),
        carries: (e) => !!e.servicePolicyChange?.relatedEntityIds?.includes(identity),
      },
      { kind: 'a service updated (renamed)', run: () => ok(api.api('PATCH', `/services/${svc.id}`, { name: renamed }), 'service'), carries: (e) => e.service?.name === renamed },
    ];
  };
  const byKind = new Map<string, { api: number[]; last: number[]; first: number[]; lag: number[] }>();
  const cpu0 = cpuS(server.pid);
  const wall0 = performance.now();
  for (let k = 0; k < CHANGES; k++) {
    for (const c of changes(k)) {
      const arrived: number[] = [];
      const all = until<void>(`the change set of ${c.kind} at all ${ROUTERS} routers`, 60_000, (done) => {
        for (const r of routers)
          r.onModel = (f, t) => {
            if (f.type !== T2.DataStateChangeSet) return;
            if (!(decode(RdmSchemas.ChangeSet, f.body).changes as Record<string, any>[]).some(c.carries)) return;
            r.onModel = undefined;
            arrived.push(t);
            if (arrived.length === routers.length) done();
          };
      });
      // This process's own delays (500 routers' frames read and decoded on one thread) count in the figure: said beside it.
      const lag = monitorEventLoopDelay({ resolution: 10 });
      lag.enable();
      const t0 = performance.now();
      await c.run(k);
      const answered = performance.now();
      await all;
      lag.disable();
      const m = byKind.get(c.kind) ?? { api: [], last: [], first: [], lag: [] };
      m.lag.push(lag.max / 1e6);
      m.api.push(answered - t0);
      m.last.push(Math.max(...arrived) - answered);
      m.first.push(Math.min(...arrived) - answered);
      byKind.set(c.kind, m);
      // Changes a second apart, as an administrator's.
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  const cpu = (cpuS(server.pid) - cpu0) / ((performance.now() - wall0) / 1000);
  const allLast: number[] = [];
  for (const [kind, m] of byKind) {
    allLast.push(...m.last);
    row([`[rdm] ${kind}: answered -> at the last of ${ROUTERS} routers`, `p50 ${s(pct(m.last, 50))} s, max ${s(Math.max(...m.last))} s (each: ${m.last.map(s).join(', ')}; first router ${s(pct(m.first, 50))} s; the API call ${pct(m.api, 50).toFixed(0)} ms; this process's longest stall ${Math.max(...m.lag).toFixed(0)} ms)`, `goal < ${CHANGE_GOAL_S} s: ${verdict(Math.max(...m.last) < CHANGE_GOAL_S * 1000, `slowest ${s(Math.max(...m.last))} s`)}`]);
  }
  row([`[rdm] controller with ${ROUTERS} routers subscribed`, `RSS ${rssBefore.toFixed(0)} MB before they connected, ${rssConnected.toFixed(0)} MB after, ${rssMb(server.pid).toFixed(0)} MB after the changes (peak ${peakRssMb(server.pid).toFixed(0)} MB); CPU ${(cpu * 100).toFixed(0)}% of a core over the changes`, '']);

  // (c) Routers that come with no model, all at once (a controller restart): each is sent the whole model.
  if (FRESH > 0) {
    const n = Math.min(FRESH, routers.length);
    step(`${n} routers subscribe again with no model, at once`);
    const fresh = routers.slice(0, n);
    const arrived: number[] = [];
    let received = 0;
    const all = until<void>(`the DataState at all ${n} routers`, 600_000, (done) => {
      for (const r of fresh) {
        r.sub = `fresh-${r.sub}`;
        r.onModel = (f, t) => {
          if (f.type !== T2.DataState) return;
          r.onModel = undefined;
          received += f.body.length;
          arrived.push(t);
          if (arrived.length === n) done();
        };
      }
    });
    const during = probe(base, admin);
    const c0 = cpuS(server.pid);
    const t0 = performance.now();
    for (const r of fresh) subscribe(r);
    await all;
    const took = performance.now() - t0;
    const api = await during.stop();
    row([
      `[rdm] ${n} routers subscribe at once with no model (a controller restart): until the last has its DataState (not decoded)`,
      `${s(took)} s (first ${s(Math.min(...arrived) - t0)} s; ${mb(received)} MB sent; CPU ${(((cpuS(server.pid) - c0) / (took / 1000)) * 100).toFixed(0)}% of a core); an API call meanwhile: ${fmtProbe(api)}; peak RSS ${peakRssMb(server.pid).toFixed(0)} MB`,
      '',
    ]);
  }
  clearInterval(renewals);
  for (const r of routers) r.p.close();
  await stopServer(server);
  return rows;
}
