// Restarts lose nothing a router still holds (issue 43, item 3): an upstream router's terminators stay
// when its control channel closes, and when the controller itself stops; the router that connects again
// (to the same controller, or to the controller started again on the same data dir) is routed to at
// once, and asked which it still holds (ValidateTerminatorsV2, 1041/1042, as upstream's controller asks):
// those it does not hold go. Played with the test router of ../shared/reference/ctrl-channel-1.1.md.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { startController, type Running } from '../../src/server/controller.js';
import { testConfig } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, i32, readBytesMap, strings, T, type EnrolledRouter } from '../peers/ctrl-router.js';
import { le32, type EdgePeer, type Frame } from '../peers/edge-sdk.js';

const VALIDATE = 1041;
const VALIDATED = 1042;

let n: TestNetwork;
let router: EnrolledRouter;
let host: Member;
let client: Member;
let service: string;
let other: string;
let second: Running | undefined;
let firstClosed = false;
beforeAll(async () => {
  n = await startNetwork();
  router = await enrollRouter(n, 'restart-1');
  service = await n.service('rs-kept', { encryptionRequired: true });
  other = await n.service('rs-lost');
  host = await n.identity('rs-kept-host', ['rs-kept-hosts', 'rs-lost-hosts']);
  client = await n.identity('rs-kept-client', ['rs-kept-clients']);
}, 60_000);
afterAll(async () => {
  await second?.close();
  if (!firstClosed) await n.c.running.close();
  fs.rmSync(n.c.dataDir, { recursive: true, force: true });
});

const terminatorRows = (running: Running, id: string) => running.ctx.store.db.selectFrom('terminators').select(['id', 'sessionId', 'peerData']).where('id', '=', id).execute();

async function bind(p: EdgePeer, id: string, serviceId: string, key: Buffer, token?: string) {
  token ??= await n.session(host, serviceId, 'Bind');
  const r = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: id, sessionToken: token, fingerprints: [fp(host.cert)], peerData: { 1003: key } })));
  expect(decode(Schemas.CreateTerminatorV2Response, r.body).result ?? 0).toBe(0);
}

/** A dial through the router; the Route it is sent, answered with success; the controller's answer. */
async function dial(p: EdgePeer, token: string): Promise<{ route: { circuitId: string; egress: { destination: string } }; answer: Frame }> {
  const seq = p.send(T.CreateCircuitV2, [[11, Buffer.from(token)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)], [10, bytesMap([[1003, Buffer.alloc(32, 6)]])]]);
  const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route, 5000)).body);
  p.send(T.RouteResult, [[1101, le32(route.attempt ?? 0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
  return { route, answer: await p.replyTo(seq) };
}

/** The validation the controller asks for; answered with `valid` for the ids given, invalid otherwise. */
async function validate(p: EdgePeer, valid: Set<string>): Promise<string[]> {
  const req = await p.next((f) => f.type === VALIDATE, 5000);
  const { terminators, fixInvalid } = decode(Schemas.ValidateTerminatorsV2Request, req.body) as { terminators: { id: string; binding: string; address: string }[]; fixInvalid?: boolean };
  expect(fixInvalid).toBe(true);
  for (const t of terminators) expect(t).toMatchObject({ binding: 'edge', address: t.id });
  const states = Object.fromEntries(terminators.map((t) => [t.id, valid.has(t.id) ? { valid: true, detail: 'valid' } : { valid: false, reason: 1, detail: 'terminator not found' }]));
  p.send(VALIDATED, [[1, i32(req.seq)]], encode(Schemas.ValidateTerminatorsV2Response, { states }));
  return terminators.map((t) => t.id).sort();
}

describe('an upstream router\'s terminators', () => {
  const kept = 'kept-' + Math.random().toString(36).slice(2);
  const lost = 'lost-' + Math.random().toString(36).slice(2);
  let dialToken: string;
  /** Made before the restart (the first controller's API is gone after it; sessions stay in the store). */
  let laterBind: string;

  it('stay when its control channel closes, are routed to as soon as it is back, and are validated with it', async () => {
    const first = await connectRouter(n.c.running.fabric!.ctrlPort!, router);
    await bind(first.p, kept, service, Buffer.alloc(32, 5));
    await bind(first.p, lost, other, Buffer.alloc(32, 8));
    dialToken = await n.session(client, service, 'Dial');
    laterBind = await n.session(host, service, 'Bind');
    first.p.close();
    await expect.poll(async () => (await n.api('GET', `/edge-routers/${router.id}`)).body.data.isOnline, { timeout: 5000 }).toBe(false);
    // Still there, with what routing to them needs.
    expect(await terminatorRows(n.c.running, kept)).toMatchObject([{ id: kept, sessionId: expect.any(String) }]);
    const back = await connectRouter(n.c.running.fabric!.ctrlPort!, router);
    const { route, answer } = await dial(back.p, dialToken);
    expect(route.egress.destination).toBe(kept);
    expect(answer.type, answer.body.toString()).toBe(T.CreateCircuitV2Response);
    expect(await validate(back.p, new Set([kept, lost]))).toEqual([kept, lost].sort());
    back.p.close();
  });

  it('survive a restart of the controller: the first dial after the router is back succeeds at once; those it lost go', async () => {
    const dataDir = n.c.dataDir;
    const db = n.c.running.ctx.config.db;
    await n.c.running.close();
    firstClosed = true;
    expect(await terminatorRows(n.c.running, kept).catch(() => 'closed')).toBe('closed');
    second = await startController(testConfig(dataDir, { port: 0, bind: '127.0.0.1', db }));
    expect(await terminatorRows(second, kept)).toHaveLength(1);
    const online = performance.now();
    const back = await connectRouter(second.fabric!.ctrlPort!, router);
    const { route, answer } = await dial(back.p, dialToken);
    const ms = performance.now() - online;
    expect(route.egress.destination).toBe(kept);
    expect(answer.type, answer.body.toString()).toBe(T.CreateCircuitV2Response);
    // The host's key was kept with the terminator: the encrypted service's dialer gets it.
    expect(readBytesMap(answer.headers.get(10)!).get(1003)).toEqual(Buffer.alloc(32, 5));
    expect(ms).toBeLessThan(2000);
    // The router lost one host while the controller was away: that terminator goes, the other stays.
    expect(await validate(back.p, new Set([kept]))).toEqual([kept, lost].sort());
    await expect.poll(async () => (await terminatorRows(second!, lost)).length, { timeout: 3000 }).toBe(0);
    expect(await terminatorRows(second, kept)).toHaveLength(1);
    back.p.close();
  });

  it('go when a dial finds the router no longer holds one (RouteResult: invalid terminator), and the dial tries again', async () => {
    const ctrlPort = second!.fabric!.ctrlPort!;
    const back = await connectRouter(ctrlPort, router);
    await validate(back.p, new Set([kept]));
    const again = 'again-' + Math.random().toString(36).slice(2);
    await bind(back.p, again, service, Buffer.alloc(32, 9), laterBind);
    // Two terminators of the service now; the router fails the first attempt for whichever it was sent.
    const seq = back.p.send(T.CreateCircuitV2, [[11, Buffer.from(dialToken)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)], [10, bytesMap([[1003, Buffer.alloc(32, 6)]])]]);
    const first = decode(Schemas.Route, (await back.p.next((f) => f.type === T.Route)).body);
    back.p.send(T.RouteResult, [[1101, le32(first.attempt ?? 0)], [1103, Buffer.from('host for terminator address not found')], [1104, Buffer.from([1])]], Buffer.from(first.circuitId));
    const retry = decode(Schemas.Route, (await back.p.next((f) => f.type === T.Route)).body);
    expect(retry.egress.destination).not.toBe(first.egress.destination);
    back.p.send(T.RouteResult, [[1101, le32(retry.attempt ?? 0)], [1102, Buffer.from([1])]], Buffer.from(retry.circuitId));
    expect((await back.p.replyTo(seq)).type).toBe(T.CreateCircuitV2Response);
    await expect.poll(async () => (await terminatorRows(second!, first.egress.destination)).length, { timeout: 3000 }).toBe(0);
    back.p.close();
  });
});
