// Router-side terminators (issue 43, item 2): `ziti edge create terminator SVC ROUTER tcp:HOST:PORT`
// (POST /terminators, binding edge_transport by upstream's CLI, or transport) is routed to. On the
// embedded router the router dials the address itself and relays (ending the end-to-end encryption for
// edge_transport, as upstream's xgress_edge_transport does; checked with the C SDK, libsodium on its
// side); on an upstream router (the test router of ../shared/reference/ctrl-channel-1.1.md) the Route's
// egress names the binding and the address, and the egress router's key comes back in its RouteResult.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_DEMO_PY } from '../../src/cli/demo/echo-demo.js';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, readBytesMap, strings, T } from '../peers/ctrl-router.js';
import { CT, H, le32, type EdgePeer, type Frame } from '../peers/edge-sdk.js';

const PYTHON = process.env.ZTC_PYTHON ?? 'python3';

let n: TestNetwork;
let echo: net.Server;
let echoPort: number;
let client: Member;
let dir: string;
beforeAll(async () => {
  n = await startNetwork();
  // A TCP echo server that half-closes when its peer does.
  echo = net.createServer({ allowHalfOpen: true }, (s) => {
    s.on('data', (d) => s.write(d));
    s.on('end', () => s.end());
    s.on('error', () => {});
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as net.AddressInfo).port;
  client = await n.identity('rs-client', ['rs-plain-clients', 'rs-secret-clients', 'rs-bad-clients', 'rs-up-clients', 'rs-mixed-clients']);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-rs-'));
}, 60_000);
afterAll(async () => {
  echo?.close();
  await n?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const text = (f: Frame) => f.body.toString('utf8');
async function terminator(service: string, router: string, address: string, o: { binding?: string; precedence?: string; cost?: number } = {}) {
  const r = await n.api('POST', '/terminators', { service, router, binding: o.binding ?? 'edge_transport', address, ...(o.precedence ? { precedence: o.precedence } : {}), ...(o.cost !== undefined ? { cost: o.cost } : {}) });
  expect(r.status, r.text).toBe(201);
  return r.body.data.id as string;
}

/** A Connect on `p` for the service; the router's answer. */
async function dial(p: EdgePeer, token: string, connId: number, headers: [number, Buffer][] = []): Promise<Frame> {
  return p.replyTo(p.send(CT.Connect, [[H.ConnId, le32(connId)], [H.Seq, le32(0)], ...headers], Buffer.from(token)));
}

describe('a router-side terminator on the embedded router', () => {
  it('is dialed as soon as it is made: bytes relayed both ways, half closes passed on, the socket\'s close ends the circuit', async () => {
    const service = await n.service('rs-plain');
    const id = await terminator(service, n.routerId, `tcp:127.0.0.1:${echoPort}`);
    const p = await n.peer(client);
    // Made a moment ago: no waiting for the next read of the router-side terminators.
    const answer = await dial(p, await n.session(client, service, 'Dial'), 7);
    expect(answer.type, text(answer)).toBe(CT.StateConnected);
    expect(answer.headers.get(H.PublicKey)).toBeUndefined();
    p.send(CT.Data, [[H.ConnId, le32(7)], [H.Seq, le32(1)]], Buffer.from('hello, router-side'));
    const back = await p.next((f) => f.type === CT.Data && f.body.length > 0);
    expect(text(back)).toBe('hello, router-side');
    // The circuit shows, ending at the terminator.
    const circuits = async () => (await n.c.call('GET', '/fabric/v1/circuits', { token: n.admin })).body.data as { terminator?: { id: string } }[];
    await expect.poll(async () => (await circuits()).some((c) => c.terminator?.id === id), { timeout: 3000 }).toBe(true);
    // Our FIN: the echo server ends, its end comes back as a FIN, then the close.
    p.send(CT.Data, [[H.ConnId, le32(7)], [H.Seq, le32(2)], [H.Flags, le32(1)]]);
    const fin = await p.next((f) => f.type === CT.Data && (f.headers.get(H.Flags)?.[0] ?? 0) & 1 ? true : false);
    expect(fin.body.length).toBe(0);
    const closed = await p.next((f) => f.type === CT.StateClosed);
    expect(closed.headers.get(H.ConnId)!.readUInt32LE(0)).toBe(7);
    expect((await n.api('GET', `/terminators/${id}`)).body.data).toMatchObject({ binding: 'edge_transport', routerId: n.routerId });
    p.close();
  });

  it('says why when it cannot dial: refused connections, addresses it does not dial, encryption it cannot give', async () => {
    const service = await n.service('rs-bad');
    const closedPort = await new Promise<number>((r) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as net.AddressInfo).port;
        s.close(() => r(port));
      });
    });
    await terminator(service, n.routerId, `tcp:127.0.0.1:${closedPort}`);
    const p = await n.peer(client);
    const token = await n.session(client, service, 'Dial');
    let r = await dial(p, token, 1);
    expect(r.type).toBe(CT.StateClosed);
    expect(text(r)).toMatch(/ECONNREFUSED/);
    // Only tcp: addresses: another kind is named in the error.
    const other = await n.service('rs-bad-2');
    await n.api('PATCH', `/identities/${client.id}`, { roleAttributes: ['rs-plain-clients', 'rs-secret-clients', 'rs-bad-clients', 'rs-bad-2-clients', 'rs-up-clients', 'rs-mixed-clients'] });
    await terminator(other, n.routerId, 'udp:127.0.0.1:9');
    r = await dial(p, await n.session(client, other, 'Dial'), 2);
    expect(text(r)).toMatch(/dials tcp:HOST:PORT addresses, not 'udp:127.0.0.1:9'/);
    // binding transport carries bytes as they are: an encrypted service cannot use it (as upstream).
    const secret = await n.service('rs-secret-raw', { encryptionRequired: true });
    await n.api('PATCH', `/identities/${client.id}`, { roleAttributes: ['rs-plain-clients', 'rs-secret-clients', 'rs-bad-clients', 'rs-bad-2-clients', 'rs-up-clients', 'rs-mixed-clients', 'rs-secret-raw-clients'] });
    await terminator(secret, n.routerId, `tcp:127.0.0.1:${echoPort}`, { binding: 'transport' });
    r = await dial(p, await n.session(client, secret, 'Dial'), 3, [[H.PublicKey, Buffer.alloc(32, 9)]]);
    expect(text(r)).toMatch(/terminator did not send public header/);
    p.close();
  });

  it('is ranked with the SDKs\' terminators: precedence first', async () => {
    const service = await n.service('rs-mixed');
    const host = await n.identity('rs-mixed-host', ['rs-mixed-hosts']);
    const h = await n.peer(host);
    const bind = h.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(await n.session(host, service, 'Bind')));
    expect((await h.replyTo(bind)).type).toBe(CT.StateConnected);
    await terminator(service, n.routerId, `tcp:127.0.0.1:${echoPort}`, { precedence: 'required' });
    const p = await n.peer(client);
    const token = await n.session(client, service, 'Dial');
    // The required router-side terminator wins over the host's default one: the host is never dialed.
    for (let i = 1; i <= 3; i++) expect((await dial(p, token, i)).type).toBe(CT.StateConnected);
    expect(h.inbox.filter((f) => f.type === CT.Dial)).toHaveLength(0);
    p.close();
    h.close();
  });

  it('ends the end-to-end encryption for edge_transport: the C SDK echoes 1 MiB through it', async () => {
    const service = await n.service('rs-secret', { encryptionRequired: true });
    await terminator(service, n.routerId, `tcp:127.0.0.1:${echoPort}`);
    const made = await n.api('POST', '/identities', { name: 'rs-csdk', type: 'Device', isAdmin: false, roleAttributes: ['rs-secret-clients'], enrollment: { ott: true } });
    const jwt = (await n.api('GET', `/identities/${made.body.data.id}`)).body.data.enrollment.ott.jwt;
    const script = path.join(dir, 'echo-demo.py');
    fs.writeFileSync(script, ECHO_DEMO_PY);
    fs.writeFileSync(path.join(dir, 'c.jwt'), jwt);
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const c = spawn(PYTHON, [script, ...args], { env: { ...process.env, ZITI_LOG: '1' } });
        let out = '';
        let err = '';
        c.stdout.on('data', (d) => (out += d));
        c.stderr.on('data', (d) => (err += d));
        const t = setTimeout(() => c.kill('SIGKILL'), 90_000);
        c.on('close', (code) => (clearTimeout(t), resolve({ code, out, err })));
      });
    const enrolled = await run(['enroll', path.join(dir, 'c.jwt'), path.join(dir, 'c.json')]);
    expect(enrolled.code, enrolled.err).toBe(0);
    const r = await run(['dial', path.join(dir, 'c.json'), 'rs-secret', String(1024 * 1024)]);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out.trim().split('\n').pop()!)).toMatchObject({ sent: 1024 * 1024, received: 1024 * 1024, match: true });
  }, 120_000);
});

describe('a router-side terminator on an upstream router', () => {
  it('is routed to: the Route\'s egress is its binding and address; the egress router\'s key comes back to the dialer', async () => {
    const service = await n.service('rs-up', { encryptionRequired: true });
    const router = await enrollRouter(n, 'rs-upstream');
    const { p } = await connectRouter(n.c.running.fabric!.ctrlPort!, router);
    const id = await terminator(service, router.id, 'tcp:127.0.0.1:8171');
    const dialToken = await n.session(client, service, 'Dial');
    const dialerKey = Buffer.alloc(32, 6);
    const request = () => p.send(T.CreateCircuitV2, [[11, Buffer.from(dialToken)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)], [10, bytesMap([[1003, dialerKey]])]]);
    let seq = request();
    let route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    expect(route.egress).toMatchObject({ binding: 'edge_transport', destination: 'tcp:127.0.0.1:8171' });
    expect(route.egress.peerData['1003']).toEqual(dialerKey);
    // The egress router ended the encryption: its key rides on the RouteResult.
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])], [1003, Buffer.alloc(32, 7)]], Buffer.from(route.circuitId));
    const answer = await p.replyTo(seq);
    expect(answer.type, answer.body.toString()).toBe(T.CreateCircuitV2Response);
    expect(readBytesMap(answer.headers.get(10)!).get(1003)).toEqual(Buffer.alloc(32, 7));
    const listed = (await n.api('GET', `/terminators/${id}`)).body.data;
    expect(listed).toMatchObject({ routerId: router.id, binding: 'edge_transport' });
    // Without a key from the egress, an encrypted service is refused (as upstream) and the route undone.
    seq = request();
    route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    const refused = await p.replyTo(seq);
    expect(refused.type).toBe(T.Error);
    expect(refused.body.toString()).toMatch(/terminator did not send public header/);
    expect(decode(Schemas.Unroute, (await p.next((f) => f.type === T.Unroute)).body).circuitId).toBe(route.circuitId);
    p.close();
  });
});
