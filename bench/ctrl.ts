// The control channel's bench (issue: upstream routers attach), with test routers written from the
// reference (test/peers/ctrl-router.ts) that answer every Route at once, so what is timed is the
// controller: circuit set-up through one router and across two linked routers, 10,000 terminators
// created and removed, the full API-session sync of 100,000 sessions a reconnecting router gets, and
// the controller's memory with 500 routers connected (before the 100,000 sessions: each router that
// connects is sent every live session, as upstream's are).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { decode, encode } from '../src/fabric/channel/protobuf.js';
import { Schemas } from '../src/fabric/ctrl/messages.js';
import { hashSecret } from '../src/model/ids.js';
import { newKeyAndCsr } from '../src/model/pki/csr.js';
import { loadSealer } from '../src/model/secrets.js';
import { openSqlite } from '../src/store/db.js';
import { bytesMap, connectRouter, enrollRouter, fp, strings, T, type EnrolledRouter } from '../test/peers/ctrl-router.js';
import type { EdgePeer, Frame } from '../test/peers/edge-sdk.js';
import { call, login, ok, startServer, stopServer, tempDir } from './http.js';

type Row = [string, string, string];
const M = '/edge/management/v1';
const C = '/edge/client/v1';
const SESSIONS = Number(process.env.BENCH_SYNC_SESSIONS ?? 100_000);
const TERMINATORS = Number(process.env.BENCH_TERMINATORS ?? 10_000);
const ROUTERS = Number(process.env.BENCH_ROUTERS ?? 500);
const DIALS = 300;

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

/** API sessions each test router was told of (full and incremental adds). */
const told = new Map<EdgePeer, number>();

/** A test router that builds every route it is sent at once (RouteResult success for the attempt). */
function autoRoute(p: EdgePeer) {
  p.onFrame = (f: Frame) => {
    if (f.type === T.ApiSessionAdded) told.set(p, (told.get(p) ?? 0) + decode(Schemas.ApiSessionAdded, f.body).apiSessions.length);
    if (f.type !== T.Route) return f.type === T.ApiSessionAdded || f.type === T.PeerStateChanges;
    const r = decode(Schemas.Route, f.body);
    const attempt = Buffer.alloc(4);
    attempt.writeUInt32LE(Number(r.attempt ?? 0));
    p.send(T.RouteResult, [[1101, attempt], [1102, Buffer.from([1])]], Buffer.from(r.circuitId));
    return true;
  };
}

export async function ctrlRows(): Promise<Row[]> {
  const dir = tempDir();
  const server = await startServer(dir);
  const base = server.url;
  const admin = await login(base);
  const api = {
    api: (method: string, p: string, body?: unknown) => call(base, method, p.startsWith('/edge/') ? p : `${M}${p}`, { token: admin, body }),
    c: { call: async (method: string, p: string, o: { body: unknown }) => { const r = await call(base, method, p, o); return { ...r, text: JSON.stringify(r.body) }; } },
  };
  const port = server.ctrlPort!;
  const rows: Row[] = [];
  const step = (what: string) => console.error(`… ctrl bench: ${what}`);
  step('model and two routers');
  for (const [kind, body] of [
    ['edge-router-policies', { name: 'all', identityRoles: ['#all'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' }],
    ['service-edge-router-policies', { name: 'all', serviceRoles: ['#all'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' }],
    ['services', { name: 'ctrl-echo', encryptionRequired: true, roleAttributes: ['ctrl'] }],
    ['service-policies', { name: 'bind', type: 'Bind', identityRoles: ['#ctrl-hosts'], serviceRoles: ['#ctrl'], semantic: 'AnyOf' }],
    ['service-policies', { name: 'dial', type: 'Dial', identityRoles: ['#ctrl-clients'], serviceRoles: ['#ctrl'], semantic: 'AnyOf' }],
  ] as const) await ok(api.api('POST', `/${kind}`, body), kind);
  const service = (await ok(api.api('GET', `/services?filter=${encodeURIComponent('name = "ctrl-echo"')}`), 'service')).data[0].id as string;
  const member = async (name: string, role: string) => {
    const made = await ok(api.api('POST', '/identities', { name, type: 'Device', isAdmin: false, roleAttributes: [role], enrollment: { ott: true } }), name);
    const token = (await ok(api.api('GET', `/identities/${made.data.id}`), name)).data.enrollment.ott.token;
    const { csrPem } = newKeyAndCsr(name);
    const cert = (await ok(call(base, 'POST', `${C}/enroll/ott`, { body: { token, clientCsr: csrPem } }), `enroll ${name}`)).data.cert as string;
    return { id: made.data.id as string, cert };
  };
  const host = await member('ctrl-host', 'ctrl-hosts');
  const client = await member('ctrl-client', 'ctrl-clients');
  // Service sessions (and their API sessions) written straight to the store: what is timed is the
  // control channel, not logins and session creates (bench/run.ts measures those).
  const store = await openSqlite(path.join(dir, 'ztc.db'));
  const sealer = loadSealer(path.join(dir, 'pki'));
  const now = new Date().toISOString();
  const apiSession = async (identityId: string) => {
    const id = randomUUID();
    const token = randomUUID();
    await store.db.insertInto('apiSessions').values({ id, createdAt: now, updatedAt: now, tags: '{}', tokenHash: hashSecret(token), tokenSealed: sealer.seal(token), identityId, authenticatorId: '', ipAddress: '127.0.0.1', configTypes: '[]', isMfaRequired: 0, isMfaComplete: 0, isCertExtendable: 0, lastActivityAt: now }).execute();
    return id;
  };
  const session = async (identityId: string, type: 'Dial' | 'Bind') => {
    const token = randomUUID();
    await store.db.insertInto('sessions').values({ id: randomUUID(), createdAt: now, updatedAt: now, tags: '{}', apiSessionId: await apiSession(identityId), identityId, serviceId: service, type, tokenHash: hashSecret(token), tokenSealed: null }).execute();
    return token;
  };

  const [ra, rb] = [await enrollRouter(api, 'bench-a'), await enrollRouter(api, 'bench-b')];
  const a = (await connectRouter(port, ra, { managesLinks: true, listeners: [{ address: 'tls:bench-a:14001', protocol: 'tls' }] })).p;
  const b = (await connectRouter(port, rb, { managesLinks: true })).p;
  for (const p of [a, b]) (p.send(T.RouterLinks, [], Buffer.alloc(0)), autoRoute(p));
  const bind = await session(host.id, 'Bind');
  const made = await a.replyTo(a.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'bench-term', sessionToken: bind, fingerprints: [fp(host.cert)], peerData: { 1003: Buffer.alloc(32, 5) } })));
  if (decode(Schemas.CreateTerminatorV2Response, made.body).result) throw new Error('bench: terminator refused');
  const dialToken = await session(client.id, 'Dial');
  const setup = async (from: EdgePeer) => {
    const ms: number[] = [];
    for (let i = 0; i < DIALS; i++) {
      const t = performance.now();
      const r = await from.replyTo(from.send(T.CreateCircuitV2, [[11, Buffer.from(dialToken)], [12, strings([fp(client.cert)])], [10, bytesMap([[1003, Buffer.alloc(32, 6)]])]]), 10_000);
      if (r.type !== T.CreateCircuitV2Response) throw new Error(`bench: dial refused: ${r.body}`);
      ms.push(performance.now() - t);
      from.send(T.Fault, [], encode(Schemas.Fault, { subject: 0, id: r.headers.get(11)!.toString() }));
    }
    return `p50 ${pct(ms, 50).toFixed(2)} ms, p99 ${pct(ms, 99).toFixed(2)} ms (${DIALS} dials)`;
  };
  step('circuit set-up');
  rows.push(['[ctrl] circuit set-up through one router (CreateCircuitV2 -> Route -> RouteResult -> answer)', await setup(a), 'upstream: by hand']);
  b.send(T.RouterLinks, [], encode(Schemas.RouterLinks, { links: [{ id: 'bench-link', destRouterId: ra.id, linkProtocol: 'tls', dialAddress: 'tls:bench-a:14001', iteration: 1 }] }));
  await new Promise((r) => setTimeout(r, 300));
  rows.push(['[ctrl] circuit set-up across two linked routers (two Routes, both awaited)', await setup(b), 'upstream: by hand']);

  step(`${TERMINATORS} terminators`);
  // Terminators: created one after another as a router's hosts bind, then removed in the router's batches.
  let t0 = performance.now();
  const ids: string[] = [];
  const pending: Promise<Frame>[] = [];
  for (let i = 0; i < TERMINATORS; i++) {
    const id = `bench-t-${i}`;
    ids.push(id);
    pending.push(a.replyTo(a.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: id, sessionToken: bind, fingerprints: [fp(host.cert)] })), 120_000));
    if (pending.length >= 100) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  const created = (performance.now() - t0) / 1000;
  t0 = performance.now();
  for (let i = 0; i < ids.length; i += 100) await a.replyTo(a.send(T.RemoveTerminators, [], encode(Schemas.RemoveTerminatorsRequest, { terminatorIds: ids.slice(i, i + 100) })), 60_000);
  const removed = (performance.now() - t0) / 1000;
  rows.push([`[ctrl] ${TERMINATORS} terminators created, then removed`, `${created.toFixed(1)} s + ${removed.toFixed(1)} s`, `goal < 30 s: ${created + removed < 30 ? 'met' : 'missed'}`]);

  step(`${ROUTERS} routers`);
  // Memory with many routers connected (each idle after its hello, as routers are between events).
  const before = rssMb(server.pid);
  const many: EnrolledRouter[] = [];
  for (let i = 0; i < ROUTERS; i++) many.push(await enrollRouter(api, `bench-many-${i}`));
  const peers: EdgePeer[] = [];
  for (const r of many) {
    const p = (await connectRouter(port, r, {})).p;
    p.onFrame = () => true;
    peers.push(p);
  }
  await new Promise((r) => setTimeout(r, 3000));
  const after = rssMb(server.pid);
  rows.push([`[ctrl] controller RSS with ${ROUTERS} routers connected`, `${after.toFixed(0)} MB (${before.toFixed(0)} MB before: ${((after - before) * 1024 / ROUTERS).toFixed(0)} KB a router)`, '']);
  for (const p of peers) p.close();
  step(`${SESSIONS} API sessions`);
  // API sessions: SESSIONS live ones (over 100 identities), then a router reconnects and is sent them all.
  const toldBefore = told.get(a) ?? 0;
  const owners = await Promise.all(Array.from({ length: 100 }, (_, i) => ok(api.api('POST', '/identities', { name: `sync-${i}`, type: 'Device', isAdmin: false }), 'owner').then((r) => r.data.id as string)));
  for (let i = 0; i < SESSIONS; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, SESSIONS - i) }, (_, j) => {
      const token = randomUUID();
      // Each made at its own moment, as logins are (the second's sync reads those made since its last look).
      const made = new Date(Date.now() - (SESSIONS - i - j) * 2).toISOString();
      return { id: randomUUID(), createdAt: made, updatedAt: made, tags: '{}', tokenHash: hashSecret(token), tokenSealed: sealer.seal(token), identityId: owners[(i + j) % owners.length], authenticatorId: '', ipAddress: '127.0.0.1', configTypes: '[]', isMfaRequired: 0, isMfaComplete: 0, isCertExtendable: 0, lastActivityAt: now };
    });
    await store.write(async (tx) => void (await tx.insertInto('apiSessions').values(batch).execute()));
  }
  // A router that stayed connected hears of them all within seconds (the second's sync): then one reconnects.
  const target = toldBefore + SESSIONS;
  for (let waited = 0; (told.get(a) ?? 0) < target && waited < 120_000; waited += 200) await new Promise((r) => setTimeout(r, 200));
  b.close();
  t0 = performance.now();
  const again = (await connectRouter(port, rb, { managesLinks: true })).p;
  let synced = 0;
  await new Promise<void>((resolve, reject) => {
    setTimeout(() => reject(new Error(`bench: the full sync did not end within 120 s (${synced} sessions came)`)), 120_000).unref();
    again.onFrame = (f) => {
      if (f.type !== T.ApiSessionAdded) return false;
      synced += decode(Schemas.ApiSessionAdded, f.body).apiSessions.length;
      if (JSON.parse(f.headers.get(1014)?.toString() ?? '{}').isLast) resolve();
      return true;
    };
  });
  const syncS = (performance.now() - t0) / 1000;
  rows.push([`[ctrl] full API-session sync on reconnect (${synced} sessions, chunks of 100)`, `${syncS.toFixed(2)} s`, `goal < 5 s: ${syncS < 5 ? 'met' : 'missed'}`]);
  again.close();
  a.close();

  await store.close();
  await stopServer(server);
  return rows;
}
