// Losing access ends traffic: a live circuit and a hosted terminator end within 2 s of the change that
// took the grant away (a service policy, a role attribute of the identity or of the service, an edge
// router policy, a posture check's result), with an audit record and an event saying why; and the host
// is told who dials as the router knows it, not as the dialer claims. Through the embedded router, with
// the SDK test peer (test/peers/edge-sdk.ts), a real controller over TLS and a real store.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { CLIENT } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, i32, strings, T } from '../peers/ctrl-router.js';
import { CT, H, le32, one, type EdgePeer, type Frame } from '../peers/edge-sdk.js';

let n: TestNetwork;
const eventsFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-access-')), 'events.jsonl');
beforeAll(async () => {
  n = await startNetwork({ eventsFile });
}, 60_000);
afterAll(() => n.close());

const text = (f: Frame) => f.body.toString('utf8');
const u32 = (f: Frame, h: number) => f.headers.get(h)!.readUInt32LE(0);
/** What the issue allows from the change's answer to the circuit's end. */
const WITHIN = 2000;

interface Setup {
  service: string;
  name: string;
  host: Member;
  client: Member;
  dial: string;
  bind: string;
}

/** A service of its own with its own policies, a host and a client: each test changes only its own. */
async function setup(name: string, o: { postureCheck?: string } = {}): Promise<Setup> {
  const service = (await n.api('POST', '/services', { name, encryptionRequired: false, roleAttributes: [name] })).body.data.id as string;
  const bind = (await n.api('POST', '/service-policies', { name: `${name}-bind`, type: 'Bind', identityRoles: [`#${name}-hosts`], serviceRoles: [`#${name}`], semantic: 'AnyOf' })).body.data.id as string;
  const dialBody: Record<string, unknown> = { name: `${name}-dial`, type: 'Dial', identityRoles: [`#${name}-clients`], serviceRoles: [`#${name}`], semantic: 'AnyOf' };
  if (o.postureCheck) dialBody.postureCheckRoles = [`@${o.postureCheck}`];
  const dial = (await n.api('POST', '/service-policies', dialBody)).body.data.id as string;
  const host = await n.identity(`${name}-host`, [`${name}-hosts`]);
  const client = await n.identity(`${name}-client`, [`${name}-clients`]);
  return { service, name, host, client, dial, bind };
}

/** The host binds, the client dials, the host accepts: a live circuit, both peers returned. */
async function circuit(s: Setup, o: { callerId?: Buffer } = {}) {
  const h = await n.peer(s.host);
  const bindToken = await n.session(s.host, s.service, 'Bind');
  const bound = await h.replyTo(h.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.RouterProvidedConnId, one]], Buffer.from(bindToken)));
  expect(bound.type, text(bound)).toBe(CT.StateConnected);
  const d = await n.peer(s.client);
  const dialToken = await n.session(s.client, s.service, 'Dial');
  const headers: [number, Buffer][] = [[H.ConnId, le32(1)], [H.Seq, le32(0)]];
  if (o.callerId) headers.push([H.CallerId, o.callerId]);
  const connect = d.send(CT.Connect, headers, Buffer.from(dialToken));
  const dialFrame = await h.next((f) => f.type === CT.Dial);
  const hostConnId = u32(dialFrame, H.RouterProvidedConnId);
  h.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dialFrame.seq]).buffer)]], le32(hostConnId));
  const connected = await d.replyTo(connect);
  expect(connected.type, text(connected)).toBe(CT.StateConnected);
  // Bytes flow before the change.
  d.send(CT.Data, [[H.ConnId, le32(1)], [H.Seq, le32(1)]], Buffer.from('before'));
  expect(text(await h.next((f) => f.type === CT.Data))).toBe('before');
  return { h, d, hostConnId, dialFrame };
}

/** The dialer's side ends (StateClosed on its conn id) within the bound, and says why. */
async function dialerEnded(d: EdgePeer, started: number) {
  const closed = await d.next((f) => f.type === CT.StateClosed && u32(f, H.ConnId) === 1, WITHIN + 500);
  expect(Date.now() - started).toBeLessThan(WITHIN);
  return text(closed);
}

const terminatorsOf = async (s: Setup) => (await n.api('GET', `/terminators?filter=${encodeURIComponent(`service = "${s.service}"`)}`)).body.data as unknown[];
const sessionsOf = async (who: Member) => (await n.api('GET', `/sessions?filter=${encodeURIComponent(`identityId = "${who.id}"`)}`)).body.data as { id: string; type: string }[];

describe('losing a grant ends live traffic within 2 s', () => {
  it('deleting the Dial policy ends the circuit, deletes the session, and records why (audit and event)', async () => {
    const s = await setup('rev-dial');
    const { h, d, hostConnId } = await circuit(s);
    const [session] = (await sessionsOf(s.client)).filter((x) => x.type === 'Dial');
    const started = Date.now();
    expect((await n.api('DELETE', `/service-policies/${s.dial}`)).status).toBe(200);
    expect(await dialerEnded(d, started)).toMatch(/access-lost: no service policy grants Dial/);
    // The host hears the end of the circuit too.
    expect(u32(await h.next((f) => f.type === CT.StateClosed, WITHIN), H.ConnId)).toBe(hostConnId);
    expect(await sessionsOf(s.client)).toEqual([]);
    const audit = (await n.api('GET', `/audit-events?entity=${session.id}`)).body.data as { entityType: string; eventType: string; action?: string; metadata: { author: { type: string } } }[];
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ entityType: 'sessions', eventType: 'deleted', metadata: { author: { type: 'controller' } } });
    expect(audit[0].action).toMatch(/^access-lost: no service policy grants Dial/);
    await expect
      .poll(() => (fs.existsSync(eventsFile) ? fs.readFileSync(eventsFile, 'utf8') : '').split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.namespace === 'edge.sessions' && e.event_type === 'deleted' && e.id === session.id), { timeout: 3000 })
      .toMatchObject({ reason: expect.stringMatching(/^access-lost/), identity_id: s.client.id, service_id: s.service });
    // The host's Bind is untouched: its terminator stays.
    expect(await terminatorsOf(s)).toHaveLength(1);
    // A new session is refused, so the client cannot dial again.
    expect((await n.c.call('POST', `${CLIENT}/sessions`, { token: s.client.token, body: { serviceId: s.service, type: 'Dial' } })).status).toBeGreaterThanOrEqual(400);
    h.close();
    d.close();
  });

  it("removing the dialer's role attribute ends the circuit", async () => {
    const s = await setup('rev-attr');
    const { h, d } = await circuit(s);
    const started = Date.now();
    expect((await n.api('PATCH', `/identities/${s.client.id}`, { roleAttributes: [] })).status).toBe(200);
    expect(await dialerEnded(d, started)).toMatch(/access-lost/);
    h.close();
    d.close();
  });

  it("deleting the Bind policy removes the host's terminator and ends its circuit; a new dial finds no host", async () => {
    const s = await setup('rev-bind');
    const { h, d } = await circuit(s);
    const started = Date.now();
    expect((await n.api('DELETE', `/service-policies/${s.bind}`)).status).toBe(200);
    // The host is told on its bind's conn id (1) and on the hosted connection.
    const ends = [await h.next((f) => f.type === CT.StateClosed, WITHIN + 500), await h.next((f) => f.type === CT.StateClosed, WITHIN)];
    expect(Date.now() - started).toBeLessThan(WITHIN);
    expect(ends.map(text).join(' ')).toMatch(/access-lost/);
    expect(await dialerEnded(d, started)).toBeTruthy();
    await expect.poll(() => terminatorsOf(s), { timeout: WITHIN }).toEqual([]);
    const token = await n.session(s.client, s.service, 'Dial');
    const refused = await d.replyTo(d.send(CT.Connect, [[H.ConnId, le32(2)], [H.Seq, le32(0)]], Buffer.from(token)));
    expect(refused.type).toBe(CT.StateClosed);
    expect(text(refused)).toMatch(/no terminator/);
    h.close();
    d.close();
  });

  it("removing the service's role attribute ends both sides", async () => {
    const s = await setup('rev-svc');
    const { h, d } = await circuit(s);
    const started = Date.now();
    expect((await n.api('PATCH', `/services/${s.service}`, { roleAttributes: [] })).status).toBe(200);
    expect(await dialerEnded(d, started)).toMatch(/access-lost/);
    await expect.poll(() => terminatorsOf(s), { timeout: WITHIN }).toEqual([]);
    h.close();
    d.close();
  });

  it('an edge router policy that no longer lets the client use the router ends its circuit here and revokes its session', async () => {
    const s = await setup('rev-erp');
    const { h, d } = await circuit(s);
    // The network's catch-all policy goes; the host keeps the router through a policy of its own.
    const erps = (await n.api('GET', '/edge-router-policies')).body.data as { id: string; name: string }[];
    expect((await n.api('POST', '/edge-router-policies', { name: 'rev-erp-hosts-only', identityRoles: ['#rev-erp-hosts', '#all-but-rev-erp'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' })).status).toBe(201);
    // Everyone else keeps their router through an attribute the other tests' identities do not need:
    // they each set up their own circuit before this one, and this test restores the policy after.
    const all = erps.find((p) => p.name === 'all')!;
    const started = Date.now();
    expect((await n.api('PATCH', `/edge-router-policies/${all.id}`, { identityRoles: ['#all-but-rev-erp'] })).status).toBe(200);
    expect(await dialerEnded(d, started)).toMatch(/access-lost: no edge router policy/);
    await expect.poll(async () => (await sessionsOf(s.client)).length, { timeout: WITHIN }).toBe(0);
    // The host's terminator stays: its identity still has the router.
    expect(await terminatorsOf(s)).toHaveLength(1);
    expect((await n.api('PATCH', `/edge-router-policies/${all.id}`, { identityRoles: ['#all'] })).status).toBe(200);
    h.close();
    d.close();
  });

  it('a posture check that stops passing ends the circuit', async () => {
    const check = (await n.api('POST', '/posture-checks', { name: 'rev-domain', typeId: 'DOMAIN', domains: ['corp.example'] })).body.data.id as string;
    const s = await setup('rev-posture', { postureCheck: check });
    expect((await n.c.call('POST', `${CLIENT}/posture-response`, { token: s.client.token, body: { id: check, typeId: 'DOMAIN', domain: 'corp.example' } })).status).toBe(201);
    const { h, d } = await circuit(s);
    const started = Date.now();
    expect((await n.c.call('POST', `${CLIENT}/posture-response`, { token: s.client.token, body: { id: check, typeId: 'DOMAIN', domain: 'home.example' } })).status).toBe(201);
    expect(await dialerEnded(d, started)).toMatch(/access-lost: posture check failing: rev-domain/);
    h.close();
    d.close();
  });

  it('a report-only posture check (ziti#2095) that stops passing ends nothing; enforced, it ends the circuit', async () => {
    const check = (await n.api('POST', '/posture-checks', { name: 'rev-domain-ro', typeId: 'DOMAIN', domains: ['corp.example'], reportOnly: true })).body.data.id as string;
    const s = await setup('rev-posture-ro', { postureCheck: check });
    expect((await n.c.call('POST', `${CLIENT}/posture-response`, { token: s.client.token, body: { id: check, typeId: 'DOMAIN', domain: 'corp.example' } })).status).toBe(201);
    const { h, d } = await circuit(s);
    expect((await n.c.call('POST', `${CLIENT}/posture-response`, { token: s.client.token, body: { id: check, typeId: 'DOMAIN', domain: 'home.example' } })).status).toBe(201);
    // Longer than the enforcement's bound: the circuit and the session stay.
    await new Promise((r) => setTimeout(r, WITHIN + 500));
    d.send(CT.Data, [[H.ConnId, le32(1)], [H.Seq, le32(2)]], Buffer.from('still here'));
    expect(text(await h.next((f) => f.type === CT.Data))).toBe('still here');
    expect(d.inbox.filter((f) => f.type === CT.StateClosed)).toEqual([]);
    expect((await sessionsOf(s.client)).filter((x) => x.type === 'Dial')).toHaveLength(1);
    // The same check enforced: the circuit ends, as for any posture check.
    const started = Date.now();
    expect((await n.api('PATCH', `/posture-checks/${check}`, { typeId: 'DOMAIN', reportOnly: false })).status).toBe(200);
    expect(await dialerEnded(d, started)).toMatch(/access-lost: posture check failing: rev-domain-ro/);
    h.close();
    d.close();
  });

  it('a change that keeps the grant ends nothing', async () => {
    const s = await setup('rev-keep');
    const { h, d } = await circuit(s);
    // Another Dial policy for the same client and service; then the first goes: the grant holds.
    expect((await n.api('POST', '/service-policies', { name: 'rev-keep-dial-2', type: 'Dial', identityRoles: [`@${s.client.id}`], serviceRoles: [`@${s.service}`], semantic: 'AnyOf' })).status).toBe(201);
    expect((await n.api('DELETE', `/service-policies/${s.dial}`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500));
    d.send(CT.Data, [[H.ConnId, le32(1)], [H.Seq, le32(2)]], Buffer.from('still here'));
    expect(text(await h.next((f) => f.type === CT.Data))).toBe('still here');
    expect(d.inbox.filter((f) => f.type === CT.StateClosed)).toEqual([]);
    h.close();
    d.close();
  });
});

describe('the caller a host is told', () => {
  it('is the dialing identity, whatever the dialer claims, and is there when the dialer sends none', async () => {
    const s = await setup('caller');
    const claimed = await circuit(s, { callerId: Buffer.from('admin') });
    expect(claimed.dialFrame.headers.get(H.CallerId)!.toString()).toBe(s.client.name);
    claimed.h.close();
    claimed.d.close();
    const none = await circuit(s);
    expect(none.dialFrame.headers.get(H.CallerId)!.toString()).toBe(s.client.name);
    none.h.close();
    none.d.close();
  });
});

describe('on an upstream router (control channel)', () => {
  /** A 1.1 router attached and synced; a terminator for the host and a routed circuit for the client. */
  async function upstream(name: string) {
    const s = await setup(name);
    const router = await enrollRouter(n, `${name}-router`);
    const { p } = await connectRouter(n.c.running.fabric!.ctrlPort!, router);
    const hello = await p.next((f) => f.type === T.ServerHello);
    p.send(T.ClientHello, [[1, i32(hello.seq)]], encode(Schemas.ClientHello, { version: 'v1.1.10', hostname: 'localhost', protocols: ['tls'], listeners: [] }));
    await p.next((f) => f.type === T.ApiSessionAdded);
    const bind = await n.session(s.host, s.service, 'Bind');
    const terminatorId = `${name}-t`;
    const made = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: terminatorId, sessionToken: bind, fingerprints: [fp(s.host.cert)] })));
    expect(decode(Schemas.CreateTerminatorV2Response, made.body).result ?? 0).toBe(0);
    const dial = await n.session(s.client, s.service, 'Dial');
    // The dialer claims to be someone else (1008 in its peer data).
    const seq = p.send(T.CreateCircuitV2, [[11, Buffer.from(dial)], [12, strings([fp(s.client.cert)])], [14, Buffer.from(s.client.token)], [10, bytesMap([[1008, Buffer.from('admin')]])]]);
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    expect((await p.replyTo(seq)).type).toBe(T.CreateCircuitV2Response);
    return { s, p, bind, dial, route, terminatorId };
  }
  const removedTokens = (f: Frame) => decode(Schemas.SessionRemoved, f.body).tokens as string[];

  it('the host is told the caller the session names, not the one the dialer claims', async () => {
    const { s, p, route } = await upstream('up-caller');
    expect(Buffer.from(route.egress.peerData['1008']).toString()).toBe(s.client.name);
    p.close();
  });

  it('deleting the Dial policy unroutes the circuit and removes the session at the router within 2 s; the Bind policy, the terminator', async () => {
    const { s, p, bind, dial, route, terminatorId } = await upstream('up-rev');
    let started = Date.now();
    expect((await n.api('DELETE', `/service-policies/${s.dial}`)).status).toBe(200);
    const unroute = await p.next((f) => f.type === T.Unroute, WITHIN + 500);
    expect(decode(Schemas.Unroute, unroute.body).circuitId).toBe(route.circuitId);
    const removed = decode(Schemas.SessionRemoved, (await p.next((f) => f.type === T.SessionRemoved, WITHIN + 500)).body);
    expect(removed.tokens).toContain(dial);
    // The session's id too: a 2.x router finds a JWT session by it.
    expect(removed.ids).toHaveLength(removed.tokens.length);
    // A 1.x router (this peer says v1.1.10) takes a JWT-shaped token for a bearer token and ignores its
    // SessionRemoved: the dialer's API session is removed there (its channel closes) and added straight back.
    const gone = await p.next((f) => f.type === T.ApiSessionRemoved && decode(Schemas.ApiSessionRemoved, f.body).tokens.includes(s.client.token), WITHIN + 500);
    expect(gone).toBeTruthy();
    expect(Date.now() - started).toBeLessThan(WITHIN);
    const back = await p.next((f) => f.type === T.ApiSessionAdded && decode(Schemas.ApiSessionAdded, f.body).apiSessions.some((a: { token: string }) => a.token === s.client.token), 2000);
    expect(decode(Schemas.ApiSessionAdded, back.body).isFullState).toBeFalsy();
    started = Date.now();
    expect((await n.api('DELETE', `/service-policies/${s.bind}`)).status).toBe(200);
    expect(removedTokens(await p.next((f) => f.type === T.SessionRemoved && removedTokens(f).includes(bind), WITHIN + 500))).toContain(bind);
    expect(Date.now() - started).toBeLessThan(WITHIN);
    await expect.poll(async () => (await n.api('GET', `/terminators?filter=${encodeURIComponent(`id = "${terminatorId}"`)}`)).body.data.length, { timeout: WITHIN }).toBe(0);
    p.close();
  });

  it('an edge router policy that drops the client from that router ends its circuit there', async () => {
    const { s, p, dial, route } = await upstream('up-erp');
    const all = ((await n.api('GET', '/edge-router-policies')).body.data as { id: string; name: string }[]).find((x) => x.name === 'all')!;
    expect((await n.api('POST', '/edge-router-policies', { name: 'up-erp-hosts', identityRoles: ['#up-erp-hosts', '#all-but-up-erp'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' })).status).toBe(201);
    const started = Date.now();
    expect((await n.api('PATCH', `/edge-router-policies/${all.id}`, { identityRoles: ['#all-but-up-erp'] })).status).toBe(200);
    expect(decode(Schemas.Unroute, (await p.next((f) => f.type === T.Unroute, WITHIN + 500)).body).circuitId).toBe(route.circuitId);
    expect(removedTokens(await p.next((f) => f.type === T.SessionRemoved && removedTokens(f).includes(dial), WITHIN + 500))).toContain(dial);
    expect(Date.now() - started).toBeLessThan(WITHIN);
    expect((await n.api('PATCH', `/edge-router-policies/${all.id}`, { identityRoles: ['#all'] })).status).toBe(200);
    p.close();
  });
});
