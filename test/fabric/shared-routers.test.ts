// Several controllers, one set of routers (issue 43, item 6): two controllers on one PostgreSQL database
// and upstream routers played by the test router of ../shared/reference/ctrl-channel-1.1.md. A router
// attached to one controller serves SDKs that logged in on the other (it learns their API sessions from
// the controller it is attached to, which reads them from the database); a router that lists both
// controllers (ctrl.endpoints, as upstream's routers take several) holds a control channel to each and
// asks either: a terminator made through one is routed to by the other, across a link; when one
// controller stops, the routers stay online through the other and keep serving, and the other keeps the
// rows of their links. (By hand with 1.1.10
// routers: docs/postgresql.md, "Routers".)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { readControllerId } from '../../src/model/resources/controllers.js';
import { testDatabase } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, strings, T, type EnrolledRouter } from '../peers/ctrl-router.js';
import { le32, type EdgePeer, type Frame } from '../peers/edge-sdk.js';

/** edge_ctrl.proto's UpdateTerminatorRequest and its response (an SDK's UpdateBind). */
const UPDATE_TERMINATOR = 20209;
const UPDATE_TERMINATOR_RESPONSE = 20210;
const postgres = !!process.env.ZTC_TEST_DB;
let a: TestNetwork;
let b: TestNetwork;
const open: EdgePeer[] = [];
beforeAll(async () => {
  if (!postgres) return;
  const db = await testDatabase();
  a = await startNetwork({ db });
  b = await startNetwork({ db });
}, 60_000);
afterAll(async () => {
  for (const p of open) p.close();
  await a?.close();
  await b?.close();
});

const ctrlPort = (n: TestNetwork) => n.c.running.fabric!.ctrlPort!;

/** A router's control channel to one controller, with its hello's Result (which names that controller). */
async function attach(n: TestNetwork, r: EnrolledRouter): Promise<{ p: EdgePeer; controllerId: string }> {
  const { p, result } = await connectRouter(ctrlPort(n), r, { managesLinks: true });
  expect(result?.headers.get(2)).toEqual(Buffer.from([1]));
  open.push(p);
  // As a 1.1 router does on every connect: the links it dialed (none yet).
  p.send(T.RouterLinks, [], Buffer.alloc(0));
  return { p, controllerId: result!.headers.get(8)!.toString() };
}

async function bind(p: EdgePeer, host: Member, token: string, address: string) {
  const r = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address, sessionToken: token, fingerprints: [fp(host.cert)] })));
  expect(decode(Schemas.CreateTerminatorV2Response, r.body)).toMatchObject({ terminatorId: address });
  expect(decode(Schemas.CreateTerminatorV2Response, r.body).result ?? 0).toBe(0);
}

const routeOf = (f: Frame) => decode(Schemas.Route, f.body) as { circuitId: string; attempt?: number; egress?: { destination: string }; forwards: unknown[] };
const routeOk = (p: EdgePeer, route: { circuitId: string; attempt?: number }) => p.send(T.RouteResult, [[1101, le32(route.attempt ?? 0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));

/** A dial through `ingress`: the CreateCircuitV2 its SDK's Connect makes. */
const dial = (ingress: EdgePeer, client: Member, token: string) => ingress.send(T.CreateCircuitV2, [[11, Buffer.from(token)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)], [10, bytesMap([])]]);

const isOnline = async (n: TestNetwork, id: string) => (await n.api('GET', `/edge-routers/${id}`)).body.data.isOnline as boolean;

describe.skipIf(!postgres)('two controllers on one database share their routers', () => {
  it('a router attached to A serves SDKs that logged in on B: it is told their API sessions, binds and dials them', async () => {
    const r = await enrollRouter(a, 'shared-only-a');
    const { p, controllerId } = await attach(a, r);
    const service = await a.service('sh-one');
    // Both log in on B.
    const host = await b.identity('sh-one-host', ['sh-one-hosts']);
    const client = await b.identity('sh-one-client', ['sh-one-clients']);
    // Told within a second or two (one message may carry both).
    const told = new Set<string>();
    while (!told.has(host.token) || !told.has(client.token)) {
      const f = await p.next((x) => x.type === T.ApiSessionAdded, 5000);
      for (const a of decode(Schemas.ApiSessionAdded, f.body).apiSessions as { token: string }[]) told.add(a.token);
    }

    await bind(p, host, await b.session(host, service, 'Bind'), 'sh-one-term');
    const seq = dial(p, client, await b.session(client, service, 'Dial'));
    const route = routeOf(await p.next((f) => f.type === T.Route));
    expect(route.egress).toMatchObject({ destination: 'sh-one-term' });
    routeOk(p, route);
    const answer = await p.replyTo(seq);
    expect(answer.type, answer.body.toString()).toBe(T.CreateCircuitV2Response);
    // The controller it is attached to made the circuit.
    expect(controllerId).toBe(readControllerId(a.c.running.ctx.config.dataDir));
    await expect.poll(async () => (await a.c.call('GET', `/fabric/v1/circuits/${route.circuitId}`, { token: a.admin })).status, { timeout: 3000 }).toBe(200);

    // A router attached to B alone cannot reach it: B holds no channel to the host's router, and says so.
    const other = await attach(b, await enrollRouter(b, 'shared-only-b'));
    const refused = await other.p.replyTo(dial(other.p, client, await b.session(client, service, 'Dial')));
    expect(refused.type).toBe(T.Error);
    expect(refused.body.toString()).toMatch(/only on router\(s\) not connected to this controller \('shared-only-a'\).*ctrl\.endpoints/);
  });

  let r1: EnrolledRouter;
  let r2: EnrolledRouter;
  let service: string;
  let client: Member;
  let host: Member;
  const ch: Record<'1a' | '1b' | '2a' | '2b', EdgePeer> = {} as never;
  it('a router that lists both holds a channel to each; a terminator made through A is dialed through B, across a link', async () => {
    r1 = await enrollRouter(a, 'shared-1');
    r2 = await enrollRouter(b, 'shared-2');
    const seen = new Set<string>();
    // r1 reaches B first, r2 A first: the lease each holds when A stops is A's for r1, B's for r2.
    for (const [k, n, r] of [['1b', b, r1], ['1a', a, r1], ['2a', a, r2], ['2b', b, r2]] as const) {
      const c = await attach(n, r);
      ch[k] = c.p;
      seen.add(c.controllerId);
    }
    // Each controller answers with its own id: a router keeps one channel per controller id (upstream
    // refuses a second channel with an id it holds).
    expect(seen.size).toBe(2);
    // Either shows where both listen (what a router's config lists: ztc edge-router create --router-config).
    const listed = (await b.api('GET', '/controllers')).body.data as { id: string; ctrlAddress: string | null }[];
    expect(Object.fromEntries(listed.map((c) => [c.id, c.ctrlAddress]))).toEqual({
      [readControllerId(a.c.running.ctx.config.dataDir)!]: `tls:localhost:${ctrlPort(a)}`,
      [readControllerId(b.c.running.ctx.config.dataDir)!]: `tls:localhost:${ctrlPort(b)}`,
    });
    // r2 dialed a link to r1 and reports it to every controller, as a 1.1 router does: B, then A, whose
    // row the store keeps (one per link, naming the controller that wrote it last).
    const link = encode(Schemas.RouterLinks, { links: [{ id: 'sh-link-21', destRouterId: r1.id, linkProtocol: 'tls', dialAddress: 'tls:shared-1:14001', iteration: 1 }] });
    const writer = async () => (await a.c.running.ctx.store.db.selectFrom('links').select('controllerId').where('id', '=', 'sh-link-21').executeTakeFirst())?.controllerId;
    ch['2b'].send(T.RouterLinks, [], link);
    await expect.poll(writer, { timeout: 3000 }).toBe(readControllerId(b.c.running.ctx.config.dataDir));
    ch['2a'].send(T.RouterLinks, [], link);
    await expect.poll(writer, { timeout: 3000 }).toBe(readControllerId(a.c.running.ctx.config.dataDir));

    service = await b.service('sh-two');
    host = await a.identity('sh-two-host', ['sh-two-hosts']);
    client = await b.identity('sh-two-client', ['sh-two-clients']);
    // The host's SDK is on r1, whose most responsive controller is A: the terminator is made there.
    await bind(ch['1a'], host, await a.session(host, service, 'Bind'), 'sh-two-term');
    // The client's SDK is on r2, which asks B.
    const seq = dial(ch['2b'], client, await b.session(client, service, 'Dial'));
    const atIngress = routeOf(await ch['2b'].next((f) => f.type === T.Route));
    const atEgress = routeOf(await ch['1b'].next((f) => f.type === T.Route));
    expect(atEgress.circuitId).toBe(atIngress.circuitId);
    expect(atEgress.egress).toMatchObject({ destination: 'sh-two-term' });
    expect(atIngress.egress).toBeUndefined();
    routeOk(ch['2b'], atIngress);
    routeOk(ch['1b'], atEgress);
    const answer = await ch['2b'].replyTo(seq);
    expect(answer.type, answer.body.toString()).toBe(T.CreateCircuitV2Response);
    // A sent nothing for it.
    await expect(ch['1a'].next((f) => f.type === T.Route, 300)).rejects.toThrow(/no matching frame/);
  });

  /** A dial through `ingress`, routed there alone (r1 hosts and dials): the terminator it went to. */
  async function dialOn(ingress: EdgePeer): Promise<string> {
    const seq = dial(ingress, client, await b.session(client, service, 'Dial'));
    const route = routeOf(await ingress.next((f) => f.type === T.Route));
    routeOk(ingress, route);
    const answer = await ingress.replyTo(seq);
    expect(answer.type, answer.body.toString()).toBe(T.CreateCircuitV2Response);
    return route.egress!.destination;
  }

  it('a terminator removed and a precedence changed through B are what A routes by', async () => {
    // Required: chosen over sh-two-term while it is there.
    const required = 1;
    const token = await a.session(host, service, 'Bind');
    const made = await ch['1a'].replyTo(ch['1a'].send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'sh-two-gone', sessionToken: token, fingerprints: [fp(host.cert)], precedence: required })));
    expect(decode(Schemas.CreateTerminatorV2Response, made.body).result ?? 0).toBe(0);
    expect(await dialOn(ch['1a'])).toBe('sh-two-gone');
    // r1 removes it through B: A no longer routes to it.
    const removed = await ch['1b'].replyTo(ch['1b'].send(T.RemoveTerminators, [], encode(Schemas.RemoveTerminatorsRequest, { terminatorIds: ['sh-two-gone'] })));
    expect(removed.type).toBe(T.Result);
    expect(await dialOn(ch['1a'])).toBe('sh-two-term');
    // One made through A whose SDK then raises its precedence through B (UpdateBind): A routes to it.
    const lowToken = await a.session(host, service, 'Bind');
    await bind(ch['1a'], host, lowToken, 'sh-two-low');
    const updated = await ch['1b'].replyTo(ch['1b'].send(UPDATE_TERMINATOR, [], encode(Schemas.UpdateTerminatorRequest, { sessionToken: lowToken, fingerprints: [fp(host.cert)], terminatorId: 'sh-two-low', precedence: required, updatePrecedence: true })));
    expect(updated.type, updated.body.toString()).toBe(UPDATE_TERMINATOR_RESPONSE);
    expect(await dialOn(ch['1a'])).toBe('sh-two-low');
  });

  it('a controller that stops leaves its routers online through the other, which keeps serving them', async () => {
    const onlyA = (await a.api('GET', '/edge-routers?filter=' + encodeURIComponent('name = "shared-only-a"'))).body.data[0].id as string;
    expect(await isOnline(b, r1.id)).toBe(true);
    await a.close();
    await ch['1a'].whenClosed(5000);
    await ch['2a'].whenClosed(5000);
    // Within B's next second, whichever controller wrote the routers' leases last (5 s: a loaded machine).
    await expect.poll(async () => [await isOnline(b, r1.id), await isOnline(b, r2.id)], { timeout: 5000 }).toEqual([true, true]);
    // A router that listed only A is offline: it has no controller.
    expect(await isOnline(b, onlyA)).toBe(false);
    // A took its row of r2's link with it; B, which holds the link, puts it back.
    await expect.poll(async () => (await b.c.call('GET', '/fabric/v1/links/sh-link-21', { token: b.admin })).status, { timeout: 5000 }).toBe(200);
    // B routes to the terminator made through A, across the link.
    const seq = dial(ch['2b'], client, await b.session(client, service, 'Dial'));
    const atIngress = routeOf(await ch['2b'].next((f) => f.type === T.Route));
    const atEgress = routeOf(await ch['1b'].next((f) => f.type === T.Route));
    expect(atEgress.egress).toMatchObject({ destination: 'sh-two-low' });
    routeOk(ch['2b'], atIngress);
    routeOk(ch['1b'], atEgress);
    expect((await ch['2b'].replyTo(seq)).type).toBe(T.CreateCircuitV2Response);
  });
});
