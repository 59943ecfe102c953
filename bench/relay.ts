// The data plane's bench: dial set-up over 1,000 dials, time to first byte (a tunneler's intercepted
// connection: Connect, StateConnected, its first Data echoed back), one stream and 10 parallel streams through the
// embedded edge router (a test SDK peer on each side, echo host), beside a plain TLS echo over loopback
// on the same machine (the ceiling of this path); the controller's memory idle and while relaying; a
// client's service-list latency quiet and while four streams relay; and OpenZiti's C SDK echo.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { newKeyAndCsr } from '../src/model/pki/csr.js';
import { ECHO_DEMO_PY } from '../src/cli/demo/echo-demo.js';
import { FRAME_DEADLINE_MS, PARTIAL_FRAME_BUDGET } from '../src/fabric/channel/guard.js';
import { CT, EdgePeer, H, le32 } from '../test/peers/edge-sdk.js';
import { call, login, ok, startServer, stopServer, tempDir, type Server } from './http.js';

type Row = [string, string, string];
const here = path.dirname(fileURLToPath(import.meta.url));
const M = '/edge/management/v1';
const C = '/edge/client/v1';
const MiB = 1024 * 1024;
const FRAME = 64 * 1024;
/** Dials timed for set-up, and connections timed to their first byte (BENCH_DIALS to change it). */
const DIALS = Number(process.env.BENCH_DIALS ?? 1000);

const rssMb = (pid: number) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return NaN;
  }
};
export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

export interface Member {
  id: string;
  cert: string;
  key: string;
  token: string;
  file?: string;
}

export function certLogin(base: string, cert: string, key: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${base}${C}/authenticate?method=cert`, { method: 'POST', cert, key, rejectUnauthorized: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(t).data.token) : reject(new Error(t))));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

export async function member(base: string, admin: string, name: string, roles: string[]): Promise<Member & { jwt: string }> {
  const made = await ok(call(base, 'POST', `${M}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, roleAttributes: roles, enrollment: { ott: true } } }), name);
  const ott = (await ok(call(base, 'GET', `${M}/identities/${made.data.id}`, { token: admin }), name)).data.enrollment.ott;
  const { csrPem, keyPem } = newKeyAndCsr(name);
  const cert = (await ok(call(base, 'POST', `${C}/enroll/ott`, { body: { token: ott.token, clientCsr: csrPem } }), `enroll ${name}`)).data.cert;
  return { id: made.data.id, cert, key: keyPem, token: await certLogin(base, cert, keyPem), jwt: ott.jwt };
}

export async function peer(port: number, m: Member): Promise<EdgePeer> {
  const p = await EdgePeer.connect(port, { cert: m.cert, key: m.key });
  // As a current SDK: the relay's ceiling, unpaced (the C SDK 0.29 row below runs the paced path).
  await p.hello(m.token, 0, { current: true });
  return p;
}

/**
 * The echo host (bench/echo-host.ts) in its own process: it answers every Dial and echoes every Data.
 * `port`: any edge router's SDK port on 127.0.0.1 (the bench's own, or a router of upstream's by hand).
 */
export async function echoHost(port: number, m: Member, bindToken: string, dir: string) {
  fs.writeFileSync(path.join(dir, 'host.pem'), m.cert);
  fs.writeFileSync(path.join(dir, 'host.key'), m.key, { mode: 0o600 });
  const child = spawn(process.execPath, [path.join(here, 'echo-host.js'), String(port), path.join(dir, 'host.pem'), path.join(dir, 'host.key'), m.token, bindToken], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.on('exit', (code) => reject(new Error(`bench: echo host exited with ${code}`)));
  });
  return child;
}

/** A controller with its embedded router, set up for echo dials: what the relay and access-loss benches share. */
export interface EchoNetwork {
  dir: string;
  server: Server;
  base: string;
  admin: string;
  /** The embedded router's SDK port. */
  port: number;
  /** The first service's id: the echo host binds it. */
  service: string;
  /** A new session on the first service for a member's API session. */
  session(m: { token: string }, type: 'Dial' | 'Bind'): Promise<string>;
  host: Awaited<ReturnType<typeof echoHost>>;
}

/**
 * Every identity and service may use every router; the services carry the attribute `tag`, a Bind policy
 * gives them to `#<tag>-hosts` (and a Dial policy to `#<tag>-clients` when `dialPolicy`); an echo host
 * (`<tag>-host`) binds the first.
 */
export async function echoNetwork(tag: string, services: [name: string, encryptionRequired: boolean][], o: { dialPolicy: boolean }): Promise<EchoNetwork> {
  const dir = tempDir();
  const server = await startServer(dir);
  const base = server.url;
  const admin = await login(base);
  const routers = (await ok(call(base, 'GET', `${M}/edge-routers?limit=10`, { token: admin }), 'routers')).data as { supportedProtocols: { tls: string } }[];
  const port = Number(routers[0].supportedProtocols.tls.split(':').pop());
  const create = (p: string, body: Record<string, unknown>) => ok(call(base, 'POST', `${M}${p}`, { token: admin, body }), `${p} ${body.name}`);
  await create('/edge-router-policies', { name: 'all', semantic: 'AnyOf', identityRoles: ['#all'], edgeRouterRoles: ['#all'] });
  await create('/service-edge-router-policies', { name: 'all', semantic: 'AnyOf', serviceRoles: ['#all'], edgeRouterRoles: ['#all'] });
  const ids: string[] = [];
  for (const [name, encryptionRequired] of services) ids.push((await create('/services', { name, encryptionRequired, roleAttributes: [tag] })).data.id);
  await create('/service-policies', { name: 'bind', type: 'Bind', semantic: 'AnyOf', identityRoles: [`#${tag}-hosts`], serviceRoles: [`#${tag}`] });
  if (o.dialPolicy) await create('/service-policies', { name: 'dial', type: 'Dial', semantic: 'AnyOf', identityRoles: [`#${tag}-clients`], serviceRoles: [`#${tag}`] });
  const service = ids[0];
  const session = async (m: { token: string }, type: 'Dial' | 'Bind') => (await ok(call(base, 'POST', `${C}/sessions`, { token: m.token, body: { serviceId: service, type } }), `${type} session`)).data.token as string;
  const hostM = await member(base, admin, `${tag}-host`, [`${tag}-hosts`]);
  const host = await echoHost(port, hostM, await session(hostM, 'Bind'), dir);
  return { dir, server, base, admin, port, service, session, host };
}

let nextConnId = 10;
/** Dial on an open channel: Connect -> StateConnected; returns the conn id and the set-up time. */
export async function dial(p: EdgePeer, token: string): Promise<{ connId: number; ms: number }> {
  const connId = nextConnId++;
  const t = performance.now();
  const seq = p.send(CT.Connect, [[H.ConnId, le32(connId)], [H.Seq, le32(0)]], Buffer.from(token));
  const r = await p.replyTo(seq, 10_000);
  if (r.type !== CT.StateConnected) throw new Error(`bench: dial refused: ${r.body}`);
  return { connId, ms: performance.now() - t };
}

/**
 * What a tunneler does for each connection it intercepts, on its open channel: Connect, wait for
 * StateConnected, send the first bytes, wait for the answer's first Data. Returns the whole time.
 */
export async function firstByte(p: EdgePeer, token: string): Promise<number> {
  const t = performance.now();
  const { connId } = await dial(p, token);
  const echoed = new Promise<void>((resolve) => {
    const previous = p.onFrame;
    p.onFrame = (f) => {
      if (f.type === CT.Data && f.headers.get(H.ConnId)!.readUInt32LE(0) === connId) {
        p.onFrame = previous;
        resolve();
        return true;
      }
      return previous?.(f) ?? false;
    };
  });
  p.send(CT.Data, [[H.ConnId, le32(connId)], [H.Seq, le32(0)]], Buffer.from('GET / HTTP/1.1\r\nHost: bench\r\n\r\n'));
  await echoed;
  const ms = performance.now() - t;
  p.send(CT.StateClosed, [[H.ConnId, le32(connId)], [H.Seq, le32(0)]], Buffer.from('done'));
  return ms;
}

/**
 * Dials per second (issue 46): dials sent at a fixed rate (a tenth of a second's worth every 100 ms,
 * not waiting for answers), each closed when connected, for `seconds`; their set-up p99. The rate
 * doubles from `from` (100) a second until the p99 is twice `baseP99` (the one-at-a-time figure) or dials
 * fail: the last rate before that is what the router sustains.
 */
export async function dialRate(p: EdgePeer, token: string, baseP99: number, seconds = 2, from = 100): Promise<{ rate: number; p99: number; at: string[] }> {
  let sustained = { rate: 0, p99: NaN };
  const at: string[] = [];
  for (let rate = from; rate <= 12_800; rate *= 2) {
    const times: number[] = [];
    let failed = 0;
    const pending: Promise<void>[] = [];
    for (let tick = 0; tick < seconds * 10; tick++) {
      for (let k = 0; k < rate / 10; k++) {
        pending.push(
          dial(p, token).then(
            (d) => {
              times.push(d.ms);
              p.send(CT.StateClosed, [[H.ConnId, le32(d.connId)], [H.Seq, le32(0)]], Buffer.from('done'));
            },
            () => void failed++,
          ),
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    await Promise.all(pending);
    const p99 = pct(times, 99);
    at.push(`${rate}/s p99 ${p99.toFixed(1)}${failed ? ` (${failed} failed)` : ''}`);
    if (failed || p99 > 2 * baseP99) break;
    sustained = { rate, p99 };
  }
  return { ...sustained, at };
}

/**
 * The data plane's set-up figures on one open channel (as an SDK keeps one) to any router: `dials`
 * dials one after another, each closed after (Connect to StateConnected); as many connections timed to
 * their first byte; then the dials per second sustained. `token`: a Dial session's token for a service
 * the router reaches an echo host for.
 */
export async function dialFigures(p: EdgePeer, token: string, dials = DIALS): Promise<{ setups: number[]; firsts: number[]; rate: Awaited<ReturnType<typeof dialRate>> }> {
  const setups: number[] = [];
  for (let i = 0; i < dials; i++) {
    const d = await dial(p, token);
    setups.push(d.ms);
    p.send(CT.StateClosed, [[H.ConnId, le32(d.connId)], [H.Seq, le32(0)]], Buffer.from('done'));
  }
  const firsts: number[] = [];
  for (let i = 0; i < dials; i++) firsts.push(await firstByte(p, token));
  const rate = await dialRate(p, token, pct(setups, 99));
  return { setups, firsts, rate };
}

/** Send `bytes` on a conn in 64 KiB frames as fast as the socket takes them; resolves when all came back. */
function stream(p: EdgePeer, connId: number, bytes: number): Promise<number> {
  return new Promise((resolve) => {
    const body = Buffer.alloc(FRAME, 7);
    const head: [number, Buffer][] = [[H.ConnId, le32(connId)], [H.Seq, le32(0)]];
    let received = 0;
    let sent = 0;
    const started = performance.now();
    const previous = p.onFrame;
    p.onFrame = (f) => {
      if (f.type === CT.Data && f.headers.get(H.ConnId)!.readUInt32LE(0) === connId) {
        received += f.body.length;
        if (received >= bytes) {
          p.onFrame = previous;
          resolve((bytes / MiB) / ((performance.now() - started) / 1000));
        }
        return true;
      }
      return previous?.(f) ?? false;
    };
    const pump = () => {
      while (sent < bytes) {
        sent += FRAME;
        p.send(CT.Data, head, body);
        if (p.socket.writableLength > 4 * MiB) return void p.socket.once('drain', pump);
      }
    };
    pump();
  });
}

/** The ceiling: the same bytes through a plain TLS echo server on loopback. */
async function tlsEcho(port: number, bytes: number): Promise<number> {
  const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
  await new Promise((r) => s.once('secureConnect', r));
  return new Promise((resolve) => {
    let received = 0;
    const started = performance.now();
    s.on('data', (d: Buffer) => {
      received += d.length;
      if (received >= bytes) {
        s.destroy();
        resolve((bytes / MiB) / ((performance.now() - started) / 1000));
      }
    });
    const chunk = Buffer.alloc(FRAME, 7);
    let sent = 0;
    const pump = () => {
      while (sent < bytes) {
        sent += FRAME;
        if (!s.write(chunk)) return void s.once('drain', pump);
      }
    };
    pump();
  });
}

/** A client's service-list latency, measured from a process of its own (bench/probe.ts). */
function serviceListLatency(base: string, token: string, seconds: number): Promise<{ p50: number; p99: number }> {
  const child = spawn(process.execPath, [path.join(here, 'probe.js'), base, token, String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`bench: probe exited with ${code}`)))));
}

function python(args: string[], timeoutMs = 120_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('python3', args, { env: { ...process.env, ZITI_LOG: '1' } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => (clearTimeout(t), resolve({ code, out })));
  });
}

/** OpenZiti's C SDK echo through the router (PyPI openziti), when python3 has it. */
async function csdkEcho(base: string, admin: string, dir: string, bytes: number): Promise<string> {
  const probe = await python(['-c', 'import openziti']);
  if (probe.code !== 0) return 'skipped: python3 -m pip install openziti==0.6.0 to measure';
  const script = path.join(dir, 'echo-demo.py');
  fs.writeFileSync(script, ECHO_DEMO_PY);
  const files: string[] = [];
  for (const [name, roles] of [['csdk-host', ['bench-hosts']], ['csdk-client', ['bench-clients']]] as const) {
    const made = await ok(call(base, 'POST', `${M}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, roleAttributes: roles, enrollment: { ott: true } } }), name);
    const jwt = (await ok(call(base, 'GET', `${M}/identities/${made.data.id}`, { token: admin }), name)).data.enrollment.ott.jwt;
    fs.writeFileSync(path.join(dir, `${name}.jwt`), jwt);
    const file = path.join(dir, `${name}.json`);
    if ((await python([script, 'enroll', path.join(dir, `${name}.jwt`), file])).code !== 0) return 'failed: the C SDK could not enroll';
    files.push(file);
  }
  const host = spawn('python3', [script, 'host', files[0], 'bench-csdk', '3'], { env: { ...process.env, ZITI_LOG: '1' } });
  await new Promise<void>((r) => host.stdout.on('data', (d: Buffer) => d.toString().includes('listening') && r()));
  await new Promise((r) => setTimeout(r, 1500));
  const rates: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await python([script, 'dial', files[1], 'bench-csdk', String(bytes)]);
    if (r.code !== 0) {
      host.kill('SIGKILL');
      return `failed: ${r.out.trim()}`;
    }
    rates.push(JSON.parse(r.out.trim().split('\n').pop()!).mibPerSecond);
  }
  host.kill('SIGKILL');
  return `${Math.min(...rates).toFixed(1)}-${Math.max(...rates).toFixed(1)} MiB/s (3 runs of ${bytes / MiB} MiB)`;
}

export async function relayRows(): Promise<Row[]> {
  const { dir, server, base, admin, port, session, host } = await echoNetwork('bench', [['bench-echo', false], ['bench-csdk', true]], { dialPolicy: true });
  const clients = await Promise.all(Array.from({ length: 10 }, (_, i) => member(base, admin, `bench-client-${i}`, ['bench-clients'])));
  const quietList = await serviceListLatency(base, clients[0].token, 5);
  const idleRss = rssMb(server.pid);

  // Dial set-up: 1,000 dials on one channel, one after another (the channel is already up, as an SDK's
  // is), each closed after; then time to first byte, 1,000 connections the same way.
  const p0 = await peer(port, clients[0]);
  const t0 = await session(clients[0], 'Dial');
  const { setups, firsts, rate } = await dialFigures(p0, t0);

  const echoServer = tempDir();
  const echoPort = 17000 + Math.floor(Math.random() * 900);
  const ceiling = spawn(process.execPath, [path.join(here, 'server.js'), 'tls-echo', String(echoPort), echoServer], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((r) => ceiling.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && r()));
  const plain = await tlsEcho(echoPort, 64 * MiB);
  ceiling.kill('SIGTERM');

  const one = await stream(p0, (await dial(p0, t0)).connId, 64 * MiB);

  // Ten streams in parallel, each on its own channel; memory sampled while they run.
  const peers = await Promise.all(clients.map((m) => peer(port, m)));
  const tokens = await Promise.all(clients.map((m) => session(m, 'Dial')));
  const conns = await Promise.all(peers.map((p, i) => dial(p, tokens[i])));
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(server.pid))), 100);
  const t = performance.now();
  await Promise.all(peers.map((p, i) => stream(p, conns[i].connId, 16 * MiB)));
  const ten = (160 * MiB) / MiB / ((performance.now() - t) / 1000);

  // The APIs beside the relay: a client's service list while four streams run.
  const busy = Promise.all(peers.slice(0, 4).map(async (p, i) => {
    for (let k = 0; k < 3; k++) await stream(p, (await dial(p, tokens[i])).connId, 32 * MiB);
  }));
  const busyList = await serviceListLatency(base, clients[9].token, 5);
  await busy;
  clearInterval(sampler);
  for (const p of [p0, ...peers]) p.close();

  host.kill('SIGTERM');
  const csdk = await csdkEcho(base, admin, dir, 32 * MiB);
  await stopServer(server);
  return [
    ['relay: plain TLS echo on loopback (ceiling)', `${plain.toFixed(1)} MiB/s`, '1.00'],
    ['relay: one stream through the router (echo)', `${one.toFixed(1)} MiB/s`, (one / plain).toFixed(2)],
    ['relay: 10 parallel streams (sum)', `${ten.toFixed(1)} MiB/s`, (ten / plain).toFixed(2)],
    [`relay: dial set-up, ${DIALS.toLocaleString('en')} dials (Connect to StateConnected)`, `p50 ${pct(setups, 50).toFixed(2)} ms  p99 ${pct(setups, 99).toFixed(2)} ms`, 'goal p99 < 15 ms'],
    ['relay: dials per second sustained (set-up p99 within 2x of one at a time)', `${rate.rate}/s (p99 ${rate.p99.toFixed(1)} ms); ${rate.at.join(', ')}`, ''],
    [`relay: time to first byte, ${DIALS.toLocaleString('en')} connections (Connect to first Data echoed)`, `p50 ${pct(firsts, 50).toFixed(2)} ms  p90 ${pct(firsts, 90).toFixed(2)} ms  p99 ${pct(firsts, 99).toFixed(2)} ms`, ''],
    ['relay: controller RSS idle / peak relaying', `${idleRss.toFixed(0)} MB / ${peakRss.toFixed(0)} MB`, ''],
    // Not measured: the bound that holds whatever clients send (channel/guard.ts).
    ['relay: unfinished frames held, at most', `${PARTIAL_FRAME_BUDGET / MiB} MiB per port (edge, ctrl); ${FRAME_DEADLINE_MS / 1000} s to finish one`, 'worst case'],
    ['relay: client service list quiet', `p50 ${quietList.p50.toFixed(1)} ms  p99 ${quietList.p99.toFixed(1)} ms`, '1.00'],
    ['relay: same, while 4 streams relay', `p50 ${busyList.p50.toFixed(1)} ms  p99 ${busyList.p99.toFixed(1)} ms`, `${(busyList.p99 / quietList.p99).toFixed(2)} (goal < 3)`],
    ['relay: C SDK echo through the router (upstream 7.6-9.2)', csdk, ''],
  ];
}
