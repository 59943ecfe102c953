// Certificates that renew themselves while the controller serves (issue 47 item 1: ziti#1155, #1994; the
// key re-announced as upstream bug #4116 asks). Over real TLS with real certificates: the clock is moved to
// the server certificate's renewal time (a third of its lifetime left) while a C SDK (OpenZiti's, PyPI
// openziti) keeps a connection through the embedded router, a 2.x router (test/peers/ctrl-router.ts) keeps
// its control channel and data model subscription, SDK channels and an HTTPS keep-alive connection stay
// open. After the look: every port serves the new certificate to new handshakes and the open connections
// carry on; JWTs carry the new kid; a token signed before is still accepted (API, embedded router) and its
// key still in /oidc/keys and in the routers' model; the 2.x router was sent the new key; the old key goes
// only once nothing it signed can be valid (OIDC tokens' lifetime, service sessions made before).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { jsonLines } from '../helpers/json-lines.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_DEMO_PY } from '../../src/cli/demo/echo-demo.js';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { expireApiSessions } from '../../src/model/auth/api-sessions.js';
import { certificateKid, renewAt } from '../../src/model/pki/pki.js';
import type { ZtcEvent } from '../../src/model/events/types.js';
import { CLIENT, MGMT } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { oidcClient } from '../helpers/oidc.js';
import { connectRouter2x, enrollRouter, i32, KeyUsage, RdmSchemas, T, T2, type EnrolledRouter } from '../peers/ctrl-router.js';
import { EdgePeer, H, one } from '../peers/edge-sdk.js';

const PYTHON = process.env.ZTC_PYTHON ?? 'python3';
const PING = new URL('../peers/csdk-ping.py', import.meta.url).pathname;
const MIN = 60_000;

let n: TestNetwork;
let dir: string;
let script: string;
let ctrlPort: number;
let r2x: EnrolledRouter;
let host: Member;
let client: Member;
let csdkHost: string;
let csdkClient: string;
const events: ZtcEvent[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Our index is told every second (30 s by default), read when the data plane's thread starts.
  process.env.ZTC_RDM_INDEX_MS = '1000';
  // OIDC refresh tokens live an hour and legacy sessions idle 5 hours here, so a replaced key's window
  // (its tokens' lifetime) ends before the sessions it signed do, and both can be stepped past.
  n = await startNetwork({ oidcRefreshTokenMinutes: 60, sessionTimeoutMinutes: 300 });
  // The looks are this test's to make (the minute's timer would race its clock).
  n.c.running.app.pkiRenewal.stop();
  n.c.running.ctx.events.subscribe((e) => void events.push(e));
  ctrlPort = n.c.running.fabric!.ctrlPort!;
  r2x = await enrollRouter(n, 'renewal-2x');
  await n.service('renew-echo');
  host = await n.identity('renew-host', ['renew-echo-hosts']);
  client = await n.identity('renew-client', ['renew-echo-clients']);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-renew-'));
  script = path.join(dir, 'echo-demo.py');
  fs.writeFileSync(script, ECHO_DEMO_PY);
  csdkHost = await enrolled('renew-csdk-host', ['renew-echo-hosts']);
  csdkClient = await enrolled('renew-csdk-client', ['renew-echo-clients']);
}, 120_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await n.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const env = { ...process.env, ZITI_LOG: process.env.CSDK_ZITI_LOG ?? '1' };

/** An identity enrolled by the C SDK (it checks the JWT against the certificate it sees on TLS). */
async function enrolled(name: string, roles: string[]): Promise<string> {
  const made = await n.api('POST', '/identities', { name, type: 'Device', isAdmin: false, roleAttributes: roles, enrollment: { ott: true } });
  const jwtFile = path.join(dir, `${name}.jwt`);
  fs.writeFileSync(jwtFile, (await n.api('GET', `/identities/${made.body.data.id}`)).body.data.enrollment.ott.jwt);
  const out = path.join(dir, `${name}.json`);
  const r = await run([script, 'enroll', jwtFile, out]);
  expect(r.code, r.err).toBe(0);
  return out;
}

function run(args: string[], timeoutMs = 60_000): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(PYTHON, args, { env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => (clearTimeout(t), resolve({ code, out, err })));
  });
}

/** JSON lines a child prints, as they come. */
function lines(child: ChildProcess): { next(ms?: number): Promise<Record<string, unknown>> } {
  const json = jsonLines(child);
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return {
    next: (ms = 30_000) => Promise.race([json.next(), new Promise<never>((_, no) => setTimeout(() => no(new Error(`no line within ${ms} ms:\n${err}`)), ms))]),
  };
}

/** The certificate a port presents to a new handshake, verified against the root alone. */
function presented(port: number, o: { cert?: string; key?: string; alpn?: string[] } = {}): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: n.c.running.ctx.pki.rootPem, cert: o.cert, key: o.key, ALPNProtocols: o.alpn }, () => {
      const peer = s.getPeerCertificate(true);
      resolve(new X509Certificate(peer.raw));
      s.destroy();
    });
    s.on('error', reject);
  });
}

const apiPort = () => n.c.running.ctx.config.port;
const edgePort = () => n.c.running.fabric!.edge!.port;

describe('the server certificate renews itself while everything stays connected', () => {
  let admin: string;
  let api: (method: string, p: string, body?: unknown) => Promise<{ status: number; body: any; text: string }>;
  let oidc: ReturnType<typeof oidcClient>;
  let p2: EdgePeer;
  let subscription: string;
  let keysAtStart: Map<string, { data: Buffer; usages: number[] }>;
  let k1: string;
  let k2: string;
  let t1: string;
  let before: { api: string; ctrl: string; edge: string };
  let agent: https.Agent;
  let kept: ReturnType<typeof lines>;
  let legacyPeer: EdgePeer;
  let jwtPeer: EdgePeer;
  let csdkHostProc: ChildProcess;
  /** When the server's and the edge router's certificates renew. */
  let due: number[];
  let holder: ChildProcess;

  /** A member's fresh certificate login (their earlier sessions did not outlive the clock's jump). */
  const relogin = async (m: Member) => {
    const r = await n.c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert: m.cert, key: m.key, body: {} });
    expect(r.status, r.text).toBe(200);
    m.token = r.body.data.token;
  };
  const kidsOf = (changes: Record<string, any>[]) => changes.filter((e) => e.publicKey).map((e) => ({ action: e.action ?? 0, kid: e.publicKey.kid as string, usages: e.publicKey.usages as number[], data: e.publicKey.data as Buffer }));
  const getJson = (p: string) => new Promise<{ status: number; body: any; reused: boolean }>((resolve, reject) => {
    const req = https.get(`https://127.0.0.1:${apiPort()}${p}`, { agent, ca: n.c.running.ctx.pki.rootPem, servername: 'localhost' }, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(t), reused: req.reusedSocket }));
    });
    req.on('error', reject);
  });

  beforeAll(async () => {
    const ctx = n.c.running.ctx;
    k1 = ctx.pki.signingJwk.kid;
    expect(k1).toBe(certificateKid(ctx.pki.serverPem));
    // To a few minutes before the earlier of the server's and the edge router's renewal times.
    const routerPem = fs.readFileSync(path.join(n.c.dataDir, 'router', 'router.pem'), 'utf8');
    due = [renewAt(ctx.pki.serverPem), renewAt(routerPem)];
    n.c.clock.advance(Math.min(...due) - 5 * MIN - n.c.clock.now().getTime());
    // A look: nothing is due yet (and the data plane follows the controller's clock from here).
    expect((await n.c.running.app.pkiRenewal.check()).renewed).toEqual([]);
    admin = await n.c.login();
    api = (method, p, body) => n.c.call(method, `${MGMT}${p}`, { token: admin, body });
    oidc = oidcClient(n.c);
    await relogin(host);
    await relogin(client);
    before = { api: (await presented(apiPort())).fingerprint256, ctrl: (await presented(ctrlPort, { cert: r2x.cert, key: r2x.key, alpn: ['ziti-ctrl'] })).fingerprint256, edge: (await presented(edgePort(), { cert: client.cert, key: client.key, alpn: ['ziti-edge'] })).fingerprint256 };

    // A 2.x router on the control channel, subscribed to the data model.
    p2 = (await connectRouter2x(ctrlPort, r2x)).p;
    const hello = await p2.next((f) => f.type === T.ServerHello);
    p2.send(T.ClientHello, [[1, i32(hello.seq)], [1024, Buffer.from([1])], [1025, Buffer.alloc(8)]], encode(Schemas.ClientHello, { version: 'v2.0.3', hostname: 'localhost', protocols: ['tls'], listeners: [] }));
    subscription = 'renewal-sub';
    p2.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { currentIndex: 0, subscriptionDurationSeconds: 300, subscriptionId: subscription }));
    const state = decode(RdmSchemas.DataState, (await p2.next((f) => f.type === T2.DataState && f.headers.get(1026)?.toString() === subscription, 10_000)).body);
    keysAtStart = new Map(kidsOf(state.events).map((k) => [k.kid, k]));
    expect(keysAtStart.get(k1)?.usages.sort()).toEqual([KeyUsage.JWTValidation, KeyUsage.ClientX509CertValidation]);

    // An OIDC login before the renewal: its access token is signed with the current key.
    t1 = (await oidc.cCert({ cert: client.cert, key: client.key })).tokens.access_token;
    expect(decodeProtectedHeader(t1).kid).toBe(k1);
    // SDK channels on the embedded router: a legacy session's and the OIDC token's.
    legacyPeer = await n.peer(host);
    jwtPeer = await EdgePeer.connect(edgePort(), { cert: client.cert, key: client.key });
    expect((await jwtPeer.hello(t1)).headers.get(H.ResultSuccess)).toEqual(one);
    // An HTTPS keep-alive connection to the API port.
    agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    expect((await getJson('/version')).status).toBe(200);

    // OpenZiti's C SDK: a host, and a dialer that keeps its connection and echoes a line when told.
    csdkHostProc = spawn(PYTHON, [script, 'host', csdkHost, 'renew-echo', '2'], { env });
    children.push(csdkHostProc);
    expect(await lines(csdkHostProc).next()).toEqual({ listening: 'renew-echo' });
    for (let i = 0; i < 75 && (await api('GET', `/terminators?filter=${encodeURIComponent('service.name = "renew-echo"')}`)).body.data.length < 1; i++) await new Promise((r) => setTimeout(r, 200));
    holder = spawn(PYTHON, [PING, csdkClient, 'renew-echo'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(holder);
    kept = lines(holder);
    expect(await kept.next()).toEqual({ connected: true });
    holder.stdin!.write('before\n');
    expect(await kept.next()).toEqual({ echoed: 'before' });
  }, 120_000);

  it('renews at its time: the server certificate (a new key), and the edge router\'s', async () => {
    const renewal = n.c.running.app.pkiRenewal;
    n.c.clock.advance(Math.max(...due) + MIN - n.c.clock.now().getTime());
    const out = await renewal.check();
    expect(out.renewed).toEqual([{ certificate: 'server', reason: 'due' }]);
    expect(out.dropped).toEqual([]);
    const ctx = n.c.running.ctx;
    k2 = ctx.pki.signingJwk.kid;
    expect(k2).not.toBe(k1);
    expect(k2).toBe(certificateKid(ctx.pki.serverPem));
    // Issued at the controller's time (valid for a year from it; from the real time on, as clients check
    // it): it renews months from now, not at the next look.
    expect(Date.parse(new X509Certificate(ctx.pki.serverPem).validTo)).toBeGreaterThan(ctx.clock.now().getTime() + 364 * 86_400_000);
    expect(renewAt(ctx.pki.serverPem)).toBeGreaterThan(ctx.clock.now().getTime() + 120 * 86_400_000);
    expect((await renewal.check()).renewed).toEqual([]);
    // Events: the server's (the key re-announced, the old one named) and the edge router's.
    await expect.poll(() => events.filter((e) => e.namespace === 'pki' && e.event_type === 'renewed').map((e) => (e as { certificate: string }).certificate).sort()).toEqual(['edge-router', 'server']);
    const server = events.find((e) => e.namespace === 'pki' && e.certificate === 'server') as Record<string, unknown>;
    expect(server).toMatchObject({ reason: 'due', kid: k2, previous_kid: k1 });
    // The controller's row (what the other controllers of a database read): the new certificate, the old one kept.
    const row = await ctx.store.db.selectFrom('controllers').select(['certPem', 'retiredCerts']).executeTakeFirstOrThrow();
    expect(certificateKid(row.certPem)).toBe(k2);
    expect(JSON.parse(row.retiredCerts).map((c: { certPem: string }) => certificateKid(c.certPem))).toEqual([k1]);
  });

  it('every port serves the new certificate to new handshakes, trusted through the root', async () => {
    const ctx = n.c.running.ctx;
    const server = new X509Certificate(ctx.pki.serverPem);
    const api = await presented(apiPort());
    expect(api.fingerprint256).not.toBe(before.api);
    expect(api.fingerprint256).toBe(server.fingerprint256);
    const ctrl = await presented(ctrlPort, { cert: r2x.cert, key: r2x.key, alpn: ['ziti-ctrl'] });
    expect(ctrl.fingerprint256).not.toBe(before.ctrl);
    expect(ctrl.fingerprint256).toBe(server.fingerprint256);
    const edge = await presented(edgePort(), { cert: client.cert, key: client.key, alpn: ['ziti-edge'] });
    expect(edge.fingerprint256).not.toBe(before.edge);
    expect(renewAt(edge.toString())).toBeGreaterThan(ctx.clock.now().getTime());
  });

  it('connections made before carry on: HTTPS keep-alive, SDK channels, the 2.x router, the C SDK', async () => {
    const again = await getJson('/version');
    expect(again.status).toBe(200);
    expect(again.reused).toBe(true);
    expect(legacyPeer.closed).toBe(false);
    expect(jwtPeer.closed).toBe(false);
    expect(p2.closed).toBe(false);
    p2.send(T.Heartbeat, [[5, Buffer.from('0102030405060708', 'hex')]]);
    expect((await p2.next((f) => f.headers.has(6))).headers.get(6)).toEqual(Buffer.from('0102030405060708', 'hex'));
    holder.stdin!.write('after\n');
    expect(await kept.next()).toEqual({ echoed: 'after' });
    holder.stdin!.end();
    // A new C SDK dial, through a controller and a router presenting the new certificates.
    const dial = await run([script, 'dial', csdkClient, 'renew-echo', String(64 * 1024)], 90_000);
    expect(dial.code, dial.err).toBe(0);
    expect(JSON.parse(dial.out.trim().split('\n').pop()!)).toMatchObject({ received: 64 * 1024, match: true });
  }, 120_000);

  it('the 2.x router is sent the new key at once, and keeps the old one', async () => {
    // The change set that announces the new key (the old one updated to JWTs only).
    let announced: ReturnType<typeof kidsOf> = [];
    for (let i = 0; i < 10 && !announced.some((k) => k.kid === k2); i++) {
      const m = await p2.next((f) => f.type === T2.DataStateChangeSet && f.headers.get(1026)?.toString() === subscription, 5000);
      announced = [...announced, ...kidsOf(decode(RdmSchemas.ChangeSet, m.body).changes)];
    }
    const fresh = announced.find((k) => k.kid === k2)!;
    expect(fresh.action).toBe(0);
    expect(Buffer.from(fresh.data).equals(Buffer.from(new X509Certificate(n.c.running.ctx.pki.serverPem).raw))).toBe(true);
    expect(fresh.usages.sort()).toEqual([KeyUsage.JWTValidation, KeyUsage.ClientX509CertValidation]);
    expect(announced.filter((k) => k.kid === k1).every((k) => k.action === 1 && k.usages.includes(KeyUsage.JWTValidation))).toBe(true);
    // A router verifying the old token with the key it holds for k1: still good.
    const old = keysAtStart.get(k1)!;
    await jwtVerify(t1, new X509Certificate(old.data).publicKey, { currentDate: n.c.clock.now() });
  });

  it('JWTs signed after carry the new kid; the one signed before is still accepted everywhere; every JWKS lists both', async () => {
    // The API: the old token as a bearer.
    expect((await n.c.call('GET', `${CLIENT}/current-identity`, { bearer: t1 })).status).toBe(200);
    // The embedded router (its thread loaded the new keys and kept the old).
    const oldHello = await EdgePeer.connect(edgePort(), { cert: client.cert, key: client.key });
    expect((await oldHello.hello(t1)).headers.get(H.ResultSuccess)).toEqual(one);
    oldHello.close();
    // A login after: the new kid, accepted by both.
    const t2 = (await oidc.cCert({ cert: client.cert, key: client.key })).tokens.access_token;
    expect(decodeProtectedHeader(t2).kid).toBe(k2);
    expect((await n.c.call('GET', `${CLIENT}/current-identity`, { bearer: t2 })).status).toBe(200);
    const newHello = await EdgePeer.connect(edgePort(), { cert: client.cert, key: client.key });
    expect((await newHello.hello(t2)).headers.get(H.ResultSuccess)).toEqual(one);
    newHello.close();
    // A service session's JWT (what 2.x routers verify) too.
    const dial = await n.c.call('POST', `${CLIENT}/sessions`, { token: client.token, body: { serviceId: (await api('GET', '/services?filter=' + encodeURIComponent('name = "renew-echo"'))).body.data[0].id, type: 'Dial' } });
    expect(decodeProtectedHeader(dial.body.data.token).kid).toBe(k2);
    // /oidc/keys: the new key first, the old one still; both verify what they signed.
    const jwks = (await n.c.call('GET', '/oidc/keys')).body;
    expect(jwks.keys.map((k: { kid: string }) => k.kid)).toEqual([k2, k1]);
    await jwtVerify(t1, createLocalJWKSet(jwks), { currentDate: n.c.clock.now() });
    await jwtVerify(t2, createLocalJWKSet(jwks), { currentDate: n.c.clock.now() });
    const enroll = (await n.c.call('GET', `${CLIENT}/enroll/jwks`)).body;
    expect(enroll.keys.map((k: { kid: string }) => k.kid)).toEqual(expect.arrayContaining([k2, k1]));
  });

  it('ztc pki status, the health check and the metrics say when each renews', async () => {
    const status = (await api('GET', '/pki/status?own=true')).body.data;
    const server = status.certificates.find((c: { kind: string }) => c.kind === 'server');
    expect(Date.parse(server.renewsAt)).toBe(renewAt(n.c.running.ctx.pki.serverPem));
    expect(status.certificates.find((c: { name: string }) => c.name === 'replaced signer')).toMatchObject({ fingerprint: k1 });
    expect(status.certificates.find((c: { kind: string }) => c.kind === 'edge-router').renewsAt).toBeTruthy();
    expect(status.warnings).toEqual([]);
    const health = JSON.parse((await n.c.call('GET', '/health-checks')).text).data.checks.find((c: { id: string }) => c.id === 'pki.renewal');
    expect(health).toMatchObject({ healthy: true });
    expect(health.details).toContain(`server renews at ${server.renewsAt}`);
    const metrics = (await n.c.call('GET', '/metrics', { token: admin, accept: 'text/plain' })).text;
    const seconds = Number(/^ztc_certificate_expiry_seconds\{certificate="server"\} (\S+)$/m.exec(metrics)![1]);
    expect(seconds).toBeGreaterThan(364 * 86_400);
    expect(metrics).toMatch(/^ztc_certificate_renewal_seconds\{certificate="edge-router"\} \d+$/m);
    expect(metrics).toMatch(/^ztc_pki_renewals_total\{certificate="server",outcome="renewed"\} 1$/m);
  });

  it('the old key stays while what it signed may be valid, then goes: from JWKS, the routers\' model, the checks', async () => {
    const renewal = n.c.running.app.pkiRenewal;
    const ctx = n.c.running.ctx;
    holder.kill('SIGKILL');
    csdkHostProc.kill('SIGKILL');
    // Past its OIDC tokens' lifetime (an hour here): service sessions made before the renewal remain,
    // and their JWTs are valid as long as they are: the key stays.
    n.c.clock.advance(65 * MIN);
    expect((await renewal.check()).dropped).toEqual([]);
    expect((await n.c.call('GET', '/oidc/keys')).body.keys.map((k: { kid: string }) => k.kid)).toEqual([k2, k1]);
    // The sessions end (idle past their 5 hours): nothing the old key signed is valid any more.
    n.c.clock.advance(301 * MIN);
    await expireApiSessions(ctx);
    const out = await renewal.check();
    expect(out.dropped).toEqual([k1]);
    expect(out.renewed).toEqual([]);
    expect((await n.c.call('GET', '/oidc/keys')).body.keys.map((k: { kid: string }) => k.kid)).toEqual([k2]);
    expect((await n.c.call('GET', `${CLIENT}/enroll/jwks`)).body.keys.map((k: { kid: string }) => k.kid)).not.toContain(k1);
    expect(events.some((e) => e.namespace === 'pki' && e.event_type === 'key-dropped' && (e as { kid?: string }).kid === k1)).toBe(true);
    // The 2.x router is told to forget it.
    let deleted = false;
    for (let i = 0; i < 10 && !deleted; i++) {
      const m = await p2.next((f) => f.type === T2.DataStateChangeSet && f.headers.get(1026)?.toString() === subscription, 5000);
      deleted = kidsOf(decode(RdmSchemas.ChangeSet, m.body).changes).some((k) => k.kid === k1 && k.action === 2);
    }
    expect(deleted).toBe(true);
    expect(p2.closed).toBe(false);
    // The controller's row no longer lists it; a restart would not load it either.
    const row = await ctx.store.db.selectFrom('controllers').select('retiredCerts').executeTakeFirstOrThrow();
    expect(JSON.parse(row.retiredCerts)).toEqual([]);
    expect(ctx.pki.signingKeys.map((k) => k.kid)).toEqual([k2]);
    expect(createHash('sha1').update(new X509Certificate(ctx.pki.serverPem).raw).digest('hex')).toBe(k2);
  });

  it('a new intermediate: the control and edge ports serve certificates it issued, the 2.x router stays', async () => {
    const ctx = n.c.running.ctx;
    const out = await n.c.running.app.pkiRenewal.renew('intermediate');
    expect(out.renewed.map((r) => r.certificate)).toEqual(['intermediate', 'server']);
    const mid = new X509Certificate(ctx.pki.intermediatePem);
    expect((await presented(ctrlPort, { cert: r2x.cert, key: r2x.key, alpn: ['ziti-ctrl'] })).checkIssued(mid)).toBe(true);
    // The edge router's certificate follows its issuer at the same look.
    expect((await presented(edgePort(), { cert: client.cert, key: client.key, alpn: ['ziti-edge'] })).checkIssued(mid)).toBe(true);
    await expect.poll(() => events.some((e) => e.namespace === 'pki' && e.certificate === 'edge-router' && e.reason === 'intermediate')).toBe(true);
    expect(p2.closed).toBe(false);
  });
});
