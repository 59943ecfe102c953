// The control channel against a test router of the 2.x kind, written from
// ../shared/reference/ctrl-channel-2.x.md (test/peers/ctrl-router.ts, 2.x mode): the grouped hello and
// its Result, the router data model with the keys a 2.x router checks SDK certificates and service
// session JWTs with, the service session as a JWT it verifies on its own, terminators and circuits.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { createHash, X509Certificate } from 'node:crypto';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { expireApiSessions } from '../../src/model/auth/api-sessions.js';
import { CLIENT } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { claimsOf, oidcClient } from '../helpers/oidc.js';
import { bytesMap, capable, connectRouter, connectRouter2x, createCircuitV3Headers, enrollRouter, fp, i32, KeyUsage, RdmSchemas, readBytesMap, ROUTER_21_CAPABILITIES, strings, T, T2, UPSTREAM_21_VERSION, type EnrolledRouter } from '../peers/ctrl-router.js';
import { CT, EdgePeer, H, le32 } from '../peers/edge-sdk.js';

let n: TestNetwork;
let ctrlPort: number;
let router: EnrolledRouter;
let other: EnrolledRouter;
beforeAll(async () => {
  // Our index is told every second here (30 s by default), read when the data plane's thread starts.
  process.env.ZTC_RDM_INDEX_MS = '1000';
  n = await startNetwork({ headersTimeoutSeconds: 2 });
  ctrlPort = n.c.running.fabric!.ctrlPort!;
  router = await enrollRouter(n, 'upstream-2x');
  other = await enrollRouter(n, 'upstream-2x-b');
}, 60_000);
afterAll(() => n.close());

describe('a 2.x router on the control channel: the grouped hello', () => {
  let p: EdgePeer;
  let connectionId: string;
  let secret: Buffer;

  it('is accepted: Result with version, connection id, id, capabilities (bit 6, not bit 5) in 1002 and 12, the group headers echoed with a new secret', async () => {
    const c = await connectRouter2x(ctrlPort, router, { listeners: [{ address: 'tls:127.0.0.1:10080', protocol: 'tls', groups: ['default'] }] });
    p = c.p;
    const r = c.result!;
    expect(r.headers.get(1)!.readInt32LE(0)).toBe(-1);
    expect(r.headers.get(2)).toEqual(Buffer.from([1]));
    expect(r.headers.get(4)!.toString().split('|')).toHaveLength(5);
    expect(r.headers.get(8)!.toString()).toBeTruthy();
    connectionId = r.headers.get(0)!.toString();
    expect(connectionId).toBeTruthy();
    const mask = r.headers.get(1002)!;
    expect(mask).toEqual(Buffer.from([0x5e]));
    expect(r.headers.get(12)).toEqual(mask);
    // SupportsJWTLegacySessions (6): without it a 2.x router refuses the controller.
    expect(capable(mask, 6)).toBe(true);
    for (const bit of [1, 2, 3, 4]) expect(capable(mask, bit)).toBe(true);
    // GroupedCtrlChan (5) clear: the router opens no second underlay.
    expect(capable(mask, 5)).toBe(false);
    expect(r.headers.get(9)).toEqual(Buffer.from([1]));
    expect(r.headers.get(7)!.toString()).toBe('ctrl.default');
    secret = r.headers.get(10)!;
    expect(secret.length).toBeGreaterThan(0);
  });

  it('stays connected past the hello deadline, its heartbeats echoed; online with its version', async () => {
    p.send(T.Heartbeat, [[5, Buffer.from('0807060504030201', 'hex')]]);
    expect((await p.next((f) => f.headers.has(6))).headers.get(6)).toEqual(Buffer.from('0807060504030201', 'hex'));
    await new Promise((r) => setTimeout(r, 2500));
    expect(p.closed).toBe(false);
    await expect.poll(async () => (await n.api('GET', `/edge-routers/${router.id}`)).body.data, { timeout: 3000 }).toMatchObject({ isOnline: true, version: 'v2.0.3', versionInfo: { version: 'v2.0.3', revision: 'e86e337a', os: 'linux', arch: 'amd64' } });
    // Its capabilities as its hello announced them (1002: RouterMultiChannel, bit 1).
    expect((await n.api('GET', `/edge-routers/${router.id}`)).body.data).toMatchObject({ capabilities: ['MULTI_CHANNEL'], capabilitiesMask: 2 });
  });

  it('its link listeners (header 1000) are what its peers are told', async () => {
    const b = await connectRouter2x(ctrlPort, other);
    expect(b.result!.headers.get(2)).toEqual(Buffer.from([1]));
    // Answer the ServerHello so it counts as up at once.
    const hello = await b.p.next((f) => f.type === T.ServerHello);
    b.p.send(T.ClientHello, [[1, i32(hello.seq)]], encode(Schemas.ClientHello, { version: 'v2.0.3', hostname: 'localhost', listeners: [] }));
    // Its links, none yet (what a router reports at once on connect).
    b.p.send(T.RouterLinks, [], Buffer.alloc(0));
    const peers = await b.p.next((f) => f.type === T.PeerStateChanges && decode(Schemas.PeerStateChanges, f.body).changes.some((c: { id: string }) => c.id === router.id), 8000);
    const change = decode(Schemas.PeerStateChanges, peers.body).changes.find((c: { id: string }) => c.id === router.id);
    expect(change.listeners[0]).toMatchObject({ address: 'tls:127.0.0.1:10080', protocol: 'tls', groups: ['default'] });
    b.p.close();
    await b.p.whenClosed();
  });

  it('refuses an underlay that is not its group\'s first: an unknown connection id, and a second one of a known group', async () => {
    const unknown = await connectRouter2x(ctrlPort, other, { later: { connectionId: 'no-such-channel' }, secret: Buffer.from('whatever') });
    expect(unknown.result!.headers.get(2)).toEqual(Buffer.from([0]));
    expect(unknown.result!.headers.get(1)!.readInt32LE(0)).toBe(-1);
    expect(unknown.result!.body.toString()).toMatch(/no channel with connection id/);
    await unknown.p.whenClosed();

    const second = await connectRouter2x(ctrlPort, router, { later: { connectionId }, secret });
    expect(second.result!.headers.get(2)).toEqual(Buffer.from([0]));
    expect(second.result!.body.toString()).toMatch(/takes no further underlays/);
    await second.p.whenClosed();
    // The first underlay carries on.
    expect(p.closed).toBe(false);
  });

  it('echoes the group secret a router brings', async () => {
    p.close();
    await p.whenClosed();
    const mine = Buffer.from('0123456789abcdef0123456789abcdef');
    // The controller may not have seen the close yet: it then refuses the new connection as a duplicate (after a probe).
    let c = await connectRouter2x(ctrlPort, router, { secret: mine, resultMs: 6000 });
    for (let i = 0; i < 5 && c.result?.headers.get(2)?.[0] !== 1; i++) {
      await new Promise((r) => setTimeout(r, 300));
      c = await connectRouter2x(ctrlPort, router, { secret: mine, resultMs: 6000 });
    }
    expect(c.result!.headers.get(2)).toEqual(Buffer.from([1]));
    expect(c.result!.headers.get(10)).toEqual(mine);
    p = c.p;
  });
});

describe('a 2.x router on the control channel: what it needs to take SDKs', () => {
  let third: EnrolledRouter;
  let p: EdgePeer;
  let host: Member;
  let client: Member;
  let service: string;
  let keys: { data: Buffer; kid: string; usages: number[]; format?: number }[] = [];
  let endIndex: bigint;
  let timelineId: string;

  beforeAll(async () => {
    third = await enrollRouter(n, 'upstream-2x-c');
    service = await n.service('echo-2x', { encryptionRequired: true });
    host = await n.identity('host-2x', ['echo-2x-hosts']);
    client = await n.identity('client-2x', ['echo-2x-clients']);
  }, 60_000);

  it('is offered the router data model (ServerHello data and 1024), its edge listener recorded from the ClientHello', async () => {
    const c = await connectRouter2x(ctrlPort, third);
    p = c.p;
    const hello = await p.next((f) => f.type === T.ServerHello);
    expect(hello.headers.get(1024)).toEqual(Buffer.from([1]));
    expect(decode(Schemas.ServerHello, hello.body).data).toEqual({ instant: 'true', routerModel: 'true' });
    const index = Buffer.alloc(8);
    p.send(T.ClientHello, [[1, i32(hello.seq)], [1024, Buffer.from([1])], [1025, index]], encode(Schemas.ClientHello, { version: 'v2.0.3', hostname: 'localhost', protocols: ['tls'], listeners: [{ address: 'tls:0.0.0.0:3998', advertise: { value: 'tls:localhost:3998', protocol: 'tls', hostname: 'localhost', port: 3998 } }] }));
    await expect.poll(async () => (await n.api('GET', `/edge-routers/${third.id}`)).body.data, { timeout: 3000 }).toMatchObject({ isOnline: true, supportedProtocols: { tls: 'tls://localhost:3998' } });
  });

  it('gets every API session with its identity id, then the public keys as a synthetic change set', async () => {
    const full = await p.next((f) => f.type === T.ApiSessionAdded);
    const added = decode(Schemas.ApiSessionAdded, full.body);
    expect(added.isFullState).toBe(true);
    const mine = (added.apiSessions as { token: string; id: string; identityId: string; certFingerprints: string[] }[]).find((s) => s.token === host.token);
    expect(mine).toMatchObject({ identityId: host.id });
    expect(mine!.certFingerprints).toContain(fp(host.cert));
    const cs = await p.next((f) => f.type === T2.DataStateChangeSet);
    // Synthetic: applied whatever the subscription (no subscription id).
    expect(cs.headers.has(1026)).toBe(false);
    const set = decode(RdmSchemas.ChangeSet, cs.body);
    expect(set.isSynthetic).toBe(true);
    keys = set.changes.map((e: { publicKey: (typeof keys)[number]; isSynthetic: boolean }) => (expect(e.isSynthetic).toBe(true), e.publicKey));
    expect(keys.length).toBeGreaterThanOrEqual(3);
    // Each kid is the certificate's SHA-1.
    for (const k of keys.filter((k) => !k.format)) expect(k.kid).toBe(createHash('sha1').update(k.data).digest('hex'));
    // The controller's certificate (the one on its TLS port, whose key signs JWTs): both usages.
    const server = Buffer.from(p.socket.getPeerCertificate().raw);
    const signer = keys.find((k) => k.data.equals(server))!;
    expect(signer.usages.sort()).toEqual([KeyUsage.JWTValidation, KeyUsage.ClientX509CertValidation]);
    // An identity's certificate chains to the keys for client certificates (as the router's TLS check does).
    expect(chainsTo(host.cert, keys.filter((k) => k.usages.includes(KeyUsage.ClientX509CertValidation)).map((k) => k.data))).toBe(true);
  });

  it('subscribes: a full DataState tagged with its subscription id, with keys, identities, services, policies and their members', async () => {
    p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { currentIndex: 0, subscriptionDurationSeconds: 300, subscriptionId: 'sub-1' }));
    const m = await p.next((f) => f.type === T2.DataState);
    expect(m.headers.get(1026)!.toString()).toBe('sub-1');
    const state = decode(RdmSchemas.DataState, m.body);
    endIndex = state.endIndex;
    timelineId = state.timelineId;
    expect(endIndex).toBeGreaterThan(0n);
    expect(timelineId).toBeTruthy();
    const events = state.events as Record<string, any>[];
    expect(events.filter((e) => e.publicKey).map((e) => e.publicKey.kid).sort()).toEqual(keys.map((k) => k.kid).sort());
    expect(events.find((e) => e.identity?.id === host.id)?.identity).toMatchObject({ name: 'host-2x' });
    expect(events.find((e) => e.service?.id === service)?.service).toMatchObject({ name: 'echo-2x', encryptionRequired: true });
    const bind = events.find((e) => e.servicePolicy?.name === 'echo-2x-bind')!.servicePolicy;
    expect(bind.policyType).toBe(2);
    const related = (type: number) => events.find((e) => e.servicePolicyChange?.policyId === bind.id && e.servicePolicyChange.relatedEntityType === type)?.servicePolicyChange;
    expect(related(1)).toMatchObject({ relatedEntityIds: [service], add: true });
    expect(related(2)).toMatchObject({ relatedEntityIds: [host.id], add: true });
    // Each policy comes before its members.
    const at = (f: (e: Record<string, any>) => boolean) => events.findIndex(f);
    expect(at((e) => e.servicePolicy?.id === bind.id)).toBeLessThan(at((e) => e.servicePolicyChange?.policyId === bind.id));
  });

  it('hears a change as a change set continuing its index: a new identity joins the policy', async () => {
    const late = await n.identity('late-host-2x', ['echo-2x-hosts']);
    const m = await p.next((f) => f.type === T2.DataStateChangeSet && f.headers.get(1026)?.toString() === 'sub-1', 8000);
    const set = decode(RdmSchemas.ChangeSet, m.body);
    expect(set.previousIndex).toBe(endIndex);
    expect(set.index).toBe(endIndex + 1n);
    expect(set.isSynthetic ?? false).toBe(false);
    const changes = set.changes as Record<string, any>[];
    expect(changes.find((e) => e.identity?.id === late.id)).toMatchObject({ identity: { name: 'late-host-2x' } });
    expect(changes.find((e) => e.identity)?.action ?? 0).toBe(0);
    expect(changes.some((e) => e.servicePolicyChange?.add && e.servicePolicyChange.relatedEntityIds.includes(late.id))).toBe(true);
    endIndex = set.index;
  });

  it('is told the index now and then (CurrentIndexMessage, header 1025)', async () => {
    // Each one says the index of its time: the latest comes within a second or two.
    const m = await p.next((f) => f.type === T2.CurrentIndexMessage && f.headers.get(1025)!.readBigUInt64LE(0) === endIndex, 4000);
    expect(m.body.length).toBe(0);
  });

  it('a router already holding the latest index on this timeline is sent nothing more; one on another is sent the whole model', async () => {
    p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { currentIndex: endIndex, subscriptionDurationSeconds: 300, timelineId, subscriptionId: 'sub-2' }));
    p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { currentIndex: 5, subscriptionDurationSeconds: 300, timelineId: 'elsewhere', subscriptionId: 'sub-3' }));
    const m = await p.next((f) => f.type === T2.DataState || f.type === T2.DataStateChangeSet);
    expect(m.type).toBe(T2.DataState);
    expect(m.headers.get(1026)!.toString()).toBe('sub-3');
  });
});

/** Whether `pem`'s certificate is issued by one of `anchors` (DER), as Go's x509 Verify with those as roots finds it. */
function chainsTo(pem: string, anchors: Buffer[]): boolean {
  const cert = new X509Certificate(pem);
  return anchors.map((d) => new X509Certificate(d)).some((a) => cert.checkIssued(a) && cert.verify(a.publicKey));
}

describe('a 2.x router: service sessions are JWTs it verifies on its own', () => {
  it('a Bind session\'s token is a JWT signed by a key of the data model (kid), with upstream\'s claims', async () => {
    const host = await n.identity('jwt-host', ['jwt-svc-hosts']);
    const service = await n.service('jwt-svc');
    const r = await n.c.call('POST', '/edge/client/v1/sessions', { token: host.token, body: { serviceId: service, type: 'Bind' } });
    expect(r.status).toBe(201);
    const token: string = r.body.data.token;
    expect(token.startsWith('ey')).toBe(true);
    // The keys as a router gets them (a fresh subscription's DataState).
    const c = await connectRouter2x(ctrlPort, await enrollRouter(n, 'upstream-2x-jwt'));
    c.p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { subscriptionDurationSeconds: 60, subscriptionId: 'jwt' }));
    const state = decode(RdmSchemas.DataState, (await c.p.next((f) => f.type === T2.DataState)).body);
    const apiSessionId = (decode(Schemas.ApiSessionAdded, (await c.p.next((f) => f.type === T.ApiSessionAdded)).body).apiSessions as { token: string; id: string }[]).find((s) => s.token === host.token)!.id;
    // As the router's pubKeyLookup: the key whose kid the header names, among those for JWTs.
    const { kid, alg } = decodeProtectedHeader(token);
    const key = (state.events as Record<string, any>[]).map((e) => e.publicKey).find((k) => k?.kid === kid && k.usages.includes(KeyUsage.JWTValidation));
    expect(key).toBeTruthy();
    expect(alg).toBe('RS256');
    const { payload } = await jwtVerify(token, new X509Certificate(key.data).publicKey, { audience: 'openziti' });
    expect(payload).toMatchObject({ sub: service, jti: r.body.data.id, z_t: 's', z_st: 'Bind', z_leg: true, z_asid: apiSessionId, z_iid: host.id });
    expect(String(payload.iss)).toMatch(/^https:\/\//);
    expect(payload.exp! - payload.iat!).toBeGreaterThan(300 * 86_400);
    c.p.close();
  });
});

describe('a 2.x router: terminators, circuits and connect events', () => {
  let p: EdgePeer;
  let r2: EnrolledRouter;
  let host: Member;
  let client: Member;
  let service: string;
  let terminatorId: string;

  beforeAll(async () => {
    r2 = await enrollRouter(n, 'upstream-2x-d');
    service = await n.service('circ-2x', { encryptionRequired: true });
    host = await n.identity('circ-host', ['circ-2x-hosts']);
    client = await n.identity('circ-client', ['circ-2x-clients']);
    p = (await connectRouter2x(ctrlPort, r2)).p;
  }, 60_000);

  it('CreateTerminatorV2 with the JWT Bind session: stored and confirmed; UpdateTerminator changes its cost', async () => {
    const bind = await n.session(host, service, 'Bind');
    expect(bind.startsWith('ey')).toBe(true);
    terminatorId = 'term-' + Math.random().toString(36).slice(2);
    const r = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: terminatorId, sessionToken: bind, apiSessionToken: host.token, fingerprints: [fp(host.cert)], peerData: { 1003: Buffer.alloc(32, 7) }, cost: 2 })));
    expect(r.type).toBe(T.CreateTerminatorV2Response);
    expect(decode(Schemas.CreateTerminatorV2Response, r.body)).toMatchObject({ terminatorId });
    expect(decode(Schemas.CreateTerminatorV2Response, r.body).result ?? 0).toBe(0);
    expect((await n.api('GET', `/terminators/${terminatorId}`)).body.data).toMatchObject({ routerId: r2.id, binding: 'edge', address: terminatorId, cost: 2 });

    const u = await p.replyTo(p.send(20209, [], encode(Schemas.UpdateTerminatorRequest, { sessionToken: bind, fingerprints: [fp(host.cert)], terminatorId, cost: 7, updateCost: true, precedence: 1, updatePrecedence: true })));
    expect(u.type).toBe(20210);
    expect((await n.api('GET', `/terminators/${terminatorId}`)).body.data).toMatchObject({ cost: 7, precedence: 'required' });
    // Another identity's Bind session cannot touch it.
    const other = await n.identity('circ-host-2', ['circ-2x-hosts']);
    const theirs = await n.session(other, service, 'Bind');
    const refused = await p.replyTo(p.send(20209, [], encode(Schemas.UpdateTerminatorRequest, { sessionToken: theirs, fingerprints: [fp(host.cert)], terminatorId, cost: 1, updateCost: true })));
    expect(refused.type).toBe(T.Error);
  });

  it('CreateCircuitV2 with the JWT Dial session (headers only): Route, RouteResult, the answer; a Fault ends it', async () => {
    const dial = await n.session(client, service, 'Dial');
    const dialerKey = Buffer.alloc(32, 8);
    // A 2.x router adds the dialer's identity id and name (1115, 1116) to the peer data.
    const seq = p.send(T.CreateCircuitV2, [[11, Buffer.from(dial)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)], [10, bytesMap([[1003, dialerKey], [1115, Buffer.from(client.id)], [1116, Buffer.from(client.name)]])]]);
    const route = await p.next((f) => f.type === T.Route);
    const r = decode(Schemas.Route, route.body);
    expect(r.egress).toMatchObject({ binding: 'edge', destination: terminatorId });
    expect(r.egress.peerData['1003']).toEqual(dialerKey);
    expect(r.egress.peerData['1008'].toString()).toBe('circ-client');
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(r.circuitId));
    const answer = await p.replyTo(seq);
    expect(answer.type).toBe(T.CreateCircuitV2Response);
    expect(answer.headers.get(11)!.toString()).toBe(r.circuitId);
    expect(readBytesMap(answer.headers.get(10)!).get(1003)).toEqual(Buffer.alloc(32, 7));
    p.send(T.Fault, [], encode(Schemas.Fault, { subject: 1, id: r.circuitId }));
    expect(decode(Schemas.Unroute, (await p.next((f) => f.type === T.Unroute)).body)).toMatchObject({ circuitId: r.circuitId, now: true });
    // A Bind session cannot dial.
    const bind = await n.session(host, service, 'Bind');
    const wrong = await p.replyTo(p.send(T.CreateCircuitV2, [[11, Buffer.from(bind)], [12, strings([fp(host.cert)])], [10, bytesMap([[1003, dialerKey]])]]));
    expect(wrong.type).toBe(T.Error);
    expect(wrong.body.toString()).toMatch(/incorrect session type/);
  });

  it('RemoveTerminators takes it away', async () => {
    const r = await p.replyTo(p.send(T.RemoveTerminators, [], encode(Schemas.RemoveTerminatorsRequest, { terminatorIds: [terminatorId] })));
    expect(r.headers.get(2)).toEqual(Buffer.from([1]));
    expect((await n.api('GET', `/terminators/${terminatorId}`)).status).toBe(404);
  });

  it('ConnectEvents: the identity shows connected to an edge router (hasEdgeRouterConnection, online) until it leaves or the router goes', async () => {
    const status = async () => {
      const d = (await n.api('GET', `/identities/${client.id}`)).body.data;
      return { has: d.hasEdgeRouterConnection, status: d.edgeRouterConnectionStatus };
    };
    expect(await status()).toEqual({ has: false, status: 'unknown' });
    const at = BigInt(Date.now());
    p.send(T2.ConnectEvents, [], encode(RdmSchemas.ConnectEvents, { fullState: true, events: [{ identityId: client.id, isConnected: true, connectTimes: [{ connectTime: at, srcAddr: '127.0.0.1:50000', dstAddr: '127.0.0.1:3022' }] }] }));
    await expect.poll(status, { timeout: 4000 }).toEqual({ has: true, status: 'online' });
    p.send(T2.ConnectEvents, [], encode(RdmSchemas.ConnectEvents, { events: [{ identityId: client.id, isConnected: false }] }));
    await expect.poll(status, { timeout: 4000 }).toEqual({ has: false, status: 'unknown' });
    p.send(T2.ConnectEvents, [], encode(RdmSchemas.ConnectEvents, { events: [{ identityId: client.id, isConnected: true }] }));
    await expect.poll(status, { timeout: 4000 }).toEqual({ has: true, status: 'online' });
    p.close();
    await expect.poll(status, { timeout: 4000 }).toEqual({ has: false, status: 'unknown' });
  });

  it('a 2.x router\'s interfaces are acknowledged', async () => {
    const c = await connectRouter2x(ctrlPort, await enrollRouter(n, 'upstream-2x-f'));
    const r = await c.p.replyTo(c.p.send(1052, [], Buffer.alloc(0)));
    expect(r.type).toBe(T.Result);
    expect(r.headers.get(2)).toEqual(Buffer.from([1]));
    c.p.close();
  });

  it('an API-session heartbeat from a 1.x router (which sends no ConnectEvents) shows the identity connected too', async () => {
    const c = await connectRouter(ctrlPort, await enrollRouter(n, 'upstream-1x-e'));
    c.p.send(20203, [], encode(Schemas.ApiSessionHeartbeat, { tokens: [host.token] }));
    await expect.poll(async () => (await n.api('GET', `/identities/${host.id}`)).body.data.hasEdgeRouterConnection, { timeout: 4000 }).toBe(true);
    c.p.close();
  });
});

describe('a 2.x router: JWT API sessions that end reach it as revocations in the data model', () => {
  // A 2.x router checks an SDK's access token on its own (signature, expiry, and the data model's
  // revocations: API_SESSION by z_asid, IDENTITY by sub with issuedBefore, JTI) and closes channels whose
  // token is revoked: an OIDC session that ends on the controller must reach it as a Revocation event.
  let p: EdgePeer;
  let oidc: ReturnType<typeof oidcClient>;
  let member: Member;
  const SUB = 'revocations';
  const accessMs = 30 * 60_000;

  beforeAll(async () => {
    oidc = oidcClient(n.c);
    member = await n.identity('rev-2x', ['rev-2x-clients']);
    const c = await connectRouter2x(ctrlPort, await enrollRouter(n, 'upstream-2x-rev'));
    p = c.p;
    p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { subscriptionDurationSeconds: 300, subscriptionId: SUB }));
    await p.next((f) => f.type === T2.DataState);
  }, 60_000);
  afterAll(() => p.close());

  /** The next change set for our subscription with a revocation of `id`: that event, and how long it took. */
  async function revocationOf(id: string, from: number) {
    const m = await p.next((f) => f.type === T2.DataStateChangeSet && f.headers.get(1026)?.toString() === SUB && (decode(RdmSchemas.ChangeSet, f.body).changes as Record<string, any>[]).some((e) => e.revocation?.id === id), 4000);
    const e = (decode(RdmSchemas.ChangeSet, m.body).changes as Record<string, any>[]).find((x) => x.revocation?.id === id)!;
    return { event: e, ms: Date.now() - from };
  }
  const login = async () => {
    const { tokens } = await oidc.cCert({ cert: member.cert, key: member.key });
    return { tokens, claims: claimsOf(tokens.access_token) as { z_asid: string; jti: string; sub: string; exp: number } };
  };
  const tokensAsid = (t: { access_token: string }) => claimsOf(t.access_token).z_asid as string;
  /** A revocation event's expiry, ms since the epoch. */
  const expiry = (r: { expiresAt: { seconds: bigint; nanos?: number } }) => Number(r.expiresAt.seconds) * 1000 + Math.round((r.expiresAt.nanos ?? 0) / 1e6);

  it('a logout (DELETE /current-api-session with the access token): API_SESSION by its id, until its access tokens have expired, within 2 s', async () => {
    const { tokens, claims } = await login();
    const at = Date.now();
    expect((await n.c.call('DELETE', `${CLIENT}/current-api-session`, { bearer: tokens.access_token })).status).toBe(200);
    const { event, ms } = await revocationOf(claims.z_asid, at);
    expect(ms).toBeLessThan(2000);
    expect(event.action ?? 0).toBe(0);
    expect(event.isSynthetic ?? false).toBe(false);
    expect(event.revocation).toMatchObject({ id: claims.z_asid, type: 'API_SESSION' });
    expect(event.revocation.issuedBefore).toBeUndefined();
    // Every access token it was given has expired by then (none is given after the end); a minute of skew.
    expect(expiry(event.revocation)).toBeGreaterThanOrEqual(claims.exp * 1000);
    expect(Math.abs(expiry(event.revocation) - (n.c.clock.now().getTime() + accessMs + 60_000))).toBeLessThan(5000);
  });

  it('OIDC end_session, an admin\'s delete, a disabled identity: each its API_SESSION revocation', async () => {
    const a = await login();
    let at = Date.now();
    expect((await n.c.call('GET', `/oidc/end_session?id_token_hint=${a.tokens.id_token}`, {})).status).toBeLessThan(400);
    expect((await revocationOf(a.claims.z_asid, at)).event.revocation.type).toBe('API_SESSION');

    const b = await login();
    at = Date.now();
    expect((await n.api('DELETE', `/api-sessions/${b.claims.z_asid}`)).status).toBe(200);
    expect((await revocationOf(b.claims.z_asid, at)).ms).toBeLessThan(2000);

    const c = await login();
    at = Date.now();
    expect((await n.api('POST', `/identities/${member.id}/disable`, { durationMinutes: 0 })).status).toBe(200);
    const disabled = await revocationOf(c.claims.z_asid, at);
    expect(disabled.ms).toBeLessThan(2000);
    expect(disabled.event.revocation.type).toBe('API_SESSION');
    await n.api('POST', `/identities/${member.id}/enable`, {});
  });

  it('POST /revocations of type API_SESSION, IDENTITY (with issuedBefore) and JTI reach it as they are', async () => {
    const a = await login();
    let at = Date.now();
    expect((await n.api('POST', '/revocations', { id: a.claims.z_asid, type: 'API_SESSION' })).status).toBe(201);
    expect((await revocationOf(a.claims.z_asid, at)).event.revocation.type).toBe('API_SESSION');

    const b = await login();
    at = Date.now();
    expect((await n.api('POST', '/revocations', { id: b.claims.jti, type: 'JTI' })).status).toBe(201);
    expect((await revocationOf(b.claims.jti, at)).event.revocation).toMatchObject({ id: b.claims.jti, type: 'JTI' });

    // Another identity: under the test's clock, which stands still, the cut-off would also refuse this one's later logins.
    const other = await n.identity('rev-2x-other', ['rev-2x-clients']);
    await oidc.cCert({ cert: other.cert, key: other.key });
    at = Date.now();
    expect((await n.api('POST', '/revocations', { id: other.id, type: 'IDENTITY' })).status).toBe(201);
    const identity = (await revocationOf(other.id, at)).event.revocation;
    expect(identity.type).toBe('IDENTITY');
    // Tokens issued before the cut-off are revoked (the router compares their iat), later ones are not.
    const cut = Number(identity.issuedBefore.seconds) * 1000;
    expect(Math.abs(cut - n.c.clock.now().getTime())).toBeLessThan(5000);
  });

  it('a deleted identity: its JWT API session revoked and the identity gone from the model', async () => {
    const gone = await n.identity('rev-2x-gone', ['rev-2x-clients']);
    // The router holds it first (its creation's change set).
    await p.next((f) => f.type === T2.DataStateChangeSet && (decode(RdmSchemas.ChangeSet, f.body).changes as Record<string, any>[]).some((e) => e.identity?.id === gone.id), 4000);
    const { tokens } = await oidc.cCert({ cert: gone.cert, key: gone.key });
    const asid = claimsOf(tokens.access_token).z_asid as string;
    const at = Date.now();
    expect((await n.api('DELETE', `/identities/${gone.id}`)).status).toBe(200);
    const m = await p.next((f) => f.type === T2.DataStateChangeSet && (decode(RdmSchemas.ChangeSet, f.body).changes as Record<string, any>[]).some((e) => e.revocation?.id === asid), 4000);
    expect(Date.now() - at).toBeLessThan(2000);
    const changes = decode(RdmSchemas.ChangeSet, m.body).changes as Record<string, any>[];
    // In the same change set: the identity deleted (action 2) and its session revoked.
    expect(changes.find((e) => e.identity?.id === gone.id)?.action).toBe(2);
  });

  it('a legacy API session that ends needs none (routers hear ApiSessionRemoved); spent refresh tokens are not sent', async () => {
    const { tokens } = await login();
    const refreshed = await oidc.cRefresh(tokens.refresh_token!, { cert: member.cert, key: member.key });
    expect(refreshed.status, refreshed.text).toBe(200);
    const spent = claimsOf(tokens.refresh_token!).jti as string;
    // The spent refresh token is revoked on the controller (it cannot be used twice) ...
    expect((await n.api('GET', `/revocations/${spent}`)).status).toBe(200);
    // ... and a router subscribing now gets every other revocation (this session's, ended now), after the keys, but not that one.
    expect((await n.api('DELETE', `/api-sessions/${tokensAsid(tokens)}`)).status).toBe(200);
    const c = await connectRouter2x(ctrlPort, await enrollRouter(n, 'upstream-2x-rev-b'));
    c.p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { subscriptionDurationSeconds: 60, subscriptionId: 'full' }));
    const events = decode(RdmSchemas.DataState, (await c.p.next((f) => f.type === T2.DataState)).body).events as Record<string, any>[];
    const revoked = events.filter((e) => e.revocation).map((e) => e.revocation.id);
    expect(revoked).toContain(tokensAsid(tokens));
    expect(revoked).not.toContain(spent);
    const lastKey = events.findLastIndex((e) => e.publicKey);
    expect(events.findIndex((e) => e.revocation)).toBeGreaterThan(lastKey);
    c.p.close();
    // A legacy (zt-session) logout: no revocation, the API session's removal says it.
    const legacy = await n.c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert: member.cert, key: member.key, body: {} });
    const id = legacy.body.data.id as string;
    await p.next((f) => f.type === T.ApiSessionAdded && (decode(Schemas.ApiSessionAdded, f.body).apiSessions as { id: string }[]).some((x) => x.id === id), 4000);
    expect((await n.c.call('DELETE', `${CLIENT}/current-api-session`, { token: legacy.body.data.token })).status).toBe(200);
    const removed = await p.next((f) => f.type === T.ApiSessionRemoved && (decode(Schemas.ApiSessionRemoved, f.body).ids as string[]).includes(id), 4000);
    expect(removed).toBeTruthy();
    expect((await n.api('GET', `/revocations/${id}`)).status).toBe(404);
  });
});

describe('a 2.x router judges the posture of OIDC sessions whose SDK reports posture to it', () => {
  // The C SDK 1.18.7 sends its posture responses to every router whose hello says it takes them (2.0.3
  // does) and to the controller only while one of its routers does not: through 2.x routers alone the
  // controller never hears them. Upstream 2.0.3 evaluates posture at session creation only for legacy
  // sessions and leaves JWT ones to the routers; so does ztc, while it holds no responses from that SDK.
  let p: EdgePeer;
  let r2: EnrolledRouter;
  let oidc: ReturnType<typeof oidcClient>;
  let host: Member;
  let client: Member;
  let service: string;
  let check: string;
  let terminatorId: string;

  beforeAll(async () => {
    oidc = oidcClient(n.c);
    r2 = await enrollRouter(n, 'upstream-2x-posture');
    service = await n.service('pst-2x');
    host = await n.identity('pst-host', ['pst-2x-hosts']);
    client = await n.identity('pst-client', ['pst-2x-clients']);
    check = (await n.api('POST', '/posture-checks', { name: 'corp-domain', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['pst-2x-check'] })).body.data.id;
    const dial = (await n.api('GET', `/service-policies?filter=${encodeURIComponent('name="pst-2x-dial"')}`)).body.data[0];
    expect((await n.api('PATCH', `/service-policies/${dial.id}`, { postureCheckRoles: ['#pst-2x-check'] })).status).toBe(200);
    p = (await connectRouter2x(ctrlPort, r2)).p;
    const bind = await n.session(host, service, 'Bind');
    terminatorId = 'pst-' + Math.random().toString(36).slice(2);
    const t = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: terminatorId, sessionToken: bind, apiSessionToken: host.token, fingerprints: [fp(host.cert)], peerData: {} })));
    expect(decode(Schemas.CreateTerminatorV2Response, t.body).result ?? 0).toBe(0);
  }, 60_000);
  afterAll(() => p.close());

  const dialSession = (access: string) => n.c.call('POST', `${CLIENT}/sessions`, { bearer: access, body: { serviceId: service, type: 'Dial' } });

  it('the data model gives the router the check on the Dial policy', async () => {
    p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { subscriptionDurationSeconds: 60, subscriptionId: 'pst' }));
    const events = decode(RdmSchemas.DataState, (await p.next((f) => f.type === T2.DataState)).body).events as Record<string, any>[];
    expect(events.find((e) => e.postureCheck?.id === check)?.postureCheck).toMatchObject({ name: 'corp-domain', typeId: 'DOMAIN' });
    const policy = events.find((e) => e.servicePolicy?.name === 'pst-2x-dial')!.servicePolicy;
    expect(events.find((e) => e.servicePolicyChange?.policyId === policy.id && e.servicePolicyChange.relatedEntityType === 3)?.servicePolicyChange.relatedEntityIds).toEqual([check]);
  });

  it('an OIDC session that sent the controller no responses gets its Dial session and dials through the 2.x router; the access watch leaves it be', async () => {
    const { tokens } = await oidc.cCert({ cert: client.cert, key: client.key });
    const s = await dialSession(tokens.access_token);
    expect(s.status, s.text).toBe(201);
    // Through the 2.x router: the controller routes it (the router checked the posture it holds).
    const seq = p.send(T.CreateCircuitV2, [[11, Buffer.from(s.body.data.token)], [12, strings([fp(client.cert)])], [14, Buffer.from(tokens.access_token)], [10, bytesMap([])]]);
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    expect((await p.replyTo(seq)).type).toBe(T.CreateCircuitV2Response);
    // Posture is judged every 5 s: the session is still there after more than that.
    await new Promise((r) => setTimeout(r, 6000));
    expect((await n.api('GET', `/sessions/${s.body.data.id}`)).status).toBe(200);
    p.send(T.Fault, [], encode(Schemas.Fault, { subject: 1, id: route.circuitId }));
  });

  it('the embedded router, which takes no posture responses, judges it on the controller: refused without responses', async () => {
    const { tokens } = await oidc.cCert({ cert: client.cert, key: client.key });
    const s = await dialSession(tokens.access_token);
    expect(s.status, s.text).toBe(201);
    const sdk = await EdgePeer.connect(n.routerPort, { cert: client.cert, key: client.key });
    expect((await sdk.hello(tokens.access_token)).type).toBe(CT.Result);
    const refused = await sdk.replyTo(sdk.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(s.body.data.token)));
    expect(refused.type).toBe(CT.StateClosed);
    expect(refused.body.toString()).toMatch(/posture checks of every policy granting Dial on 'pst-2x' fail: corp-domain/);
    sdk.close();
  });

  it('once its SDK reports to the controller, the controller judges it: a failing response takes the session away and refuses new ones', async () => {
    const { tokens } = await oidc.cCert({ cert: client.cert, key: client.key });
    const s = await dialSession(tokens.access_token);
    expect(s.status, s.text).toBe(201);
    expect((await n.c.call('POST', `${CLIENT}/posture-response`, { bearer: tokens.access_token, body: { id: check, typeId: 'DOMAIN', domain: 'home.example' } })).status).toBe(201);
    await expect.poll(async () => (await n.api('GET', `/sessions/${s.body.data.id}`)).status, { timeout: 8000, interval: 250 }).toBe(404);
    expect((await dialSession(tokens.access_token)).body.error?.code).toBe('INVALID_POSTURE');
    // A passing one: granted again.
    expect((await n.c.call('POST', `${CLIENT}/posture-response`, { bearer: tokens.access_token, body: { id: check, typeId: 'DOMAIN', domain: 'corp.example' } })).status).toBe(201);
    expect((await dialSession(tokens.access_token)).status).toBe(201);
  });

  it('a legacy session is judged on the controller as before: no responses, no Dial session', async () => {
    const r = await n.c.call('POST', `${CLIENT}/sessions`, { token: client.token, body: { serviceId: service, type: 'Dial' } });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('INVALID_POSTURE');
  });
});

describe('a 2.x router: OIDC sessions in CreateCircuitV2 and CreateTerminatorV2', () => {
  // A 2.x router's Connect takes a service id in place of a service session for an OIDC session (its
  // GetServiceSessionToken looks the id up in the data model) and forwards it as the session token, with
  // the SDK's access token as apiSessionToken (header 14, field 9 of CreateTerminatorV2).
  let p: EdgePeer;
  let oidc: ReturnType<typeof oidcClient>;
  let host: Member;
  let client: Member;
  let service: string;

  beforeAll(async () => {
    oidc = oidcClient(n.c);
    service = await n.service('sid-2x');
    host = await n.identity('sid-host', ['sid-2x-hosts']);
    client = await n.identity('sid-client', ['sid-2x-clients']);
    p = (await connectRouter2x(ctrlPort, await enrollRouter(n, 'upstream-2x-sid'))).p;
    const bind = await n.session(host, service, 'Bind');
    const t = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'sid-' + Math.random().toString(36).slice(2), sessionToken: bind, apiSessionToken: host.token, fingerprints: [fp(host.cert)], peerData: {} })));
    expect(decode(Schemas.CreateTerminatorV2Response, t.body).result ?? 0).toBe(0);
  }, 60_000);
  afterAll(() => p.close());

  const dial = (token: string, access?: string, who = client) =>
    p.send(T.CreateCircuitV2, [[11, Buffer.from(token)], [12, strings([fp(who.cert)])], ...(access ? [[14, Buffer.from(access)] as [number, Buffer]] : []), [10, bytesMap([])]]);
  /** Answer the Route of a dial and take the controller's answer. */
  async function routed(seq: number) {
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    const answer = await p.replyTo(seq);
    expect(answer.type, answer.body.toString()).toBe(T.CreateCircuitV2Response);
    return route.circuitId as string;
  }
  const dialSessions = async (apiSessionId: string) =>
    ((await n.api('GET', `/sessions?filter=${encodeURIComponent(`apiSessionId = "${apiSessionId}" and type = "Dial"`)}`)).body.data as { id: string; service: { id: string } }[]).filter((x) => x.service.id === service);

  it('a Dial naming the service by id, with the access token: routed on the API session\'s Dial session, made once and used again', async () => {
    const { tokens } = await oidc.cCert({ cert: client.cert, key: client.key });
    const asid = claimsOf(tokens.access_token).z_asid as string;
    const first = await routed(dial(service, tokens.access_token));
    expect(await dialSessions(asid)).toHaveLength(1);
    await routed(dial(service, tokens.access_token));
    expect(await dialSessions(asid)).toHaveLength(1);
    // The session ends with its API session (a logout): so do its circuits, at once.
    const at = Date.now();
    expect((await n.c.call('DELETE', `${CLIENT}/current-api-session`, { bearer: tokens.access_token })).status).toBe(200);
    await p.next((f) => f.type === T.Unroute && decode(Schemas.Unroute, f.body).circuitId === first, 4000);
    expect(Date.now() - at).toBeLessThan(2000);
  });

  it('its Dial policy deleted: the OIDC session\'s circuit through the 2.x router is unrouted within 2 s and a new Dial refused', async () => {
    const { tokens } = await oidc.cCert({ cert: client.cert, key: client.key });
    const circuit = await routed(dial(service, tokens.access_token));
    const policy = (await n.api('GET', `/service-policies?filter=${encodeURIComponent('name="sid-2x-dial"')}`)).body.data[0];
    const at = Date.now();
    expect((await n.api('DELETE', `/service-policies/${policy.id}`)).status).toBe(200);
    await p.next((f) => f.type === T.Unroute && decode(Schemas.Unroute, f.body).circuitId === circuit, 4000);
    expect(Date.now() - at).toBeLessThan(2000);
    // (A real 2.x router also refuses it itself, from the change set: seen by hand.)
    const r = await p.replyTo(dial(service, tokens.access_token));
    expect(r.type).toBe(T.Error);
    expect((await n.api('POST', '/service-policies', { name: 'sid-2x-dial', type: 'Dial', identityRoles: policy.identityRoles, serviceRoles: policy.serviceRoles, semantic: 'AnyOf' })).status).toBe(201);
  });

  it('a service id is no session without a valid OIDC access token, nor for an identity no policy lets dial', async () => {
    // A legacy API session's token, or none: the id is taken for a session token, and there is none.
    for (const access of [client.token, undefined]) {
      const r = await p.replyTo(dial(service, access));
      expect(r.type).toBe(T.Error);
      expect(r.body.toString()).toMatch(/invalid session/);
    }
    // The host may bind but not dial.
    const { tokens } = await oidc.cCert({ cert: host.cert, key: host.key });
    const r = await p.replyTo(dial(service, tokens.access_token, host));
    expect(r.type).toBe(T.Error);
    expect(r.body.toString()).toMatch(/No service policy grants this identity Dial/);
    // A revoked access token.
    const c = await oidc.cCert({ cert: client.cert, key: client.key });
    expect((await n.api('POST', '/revocations', { id: claimsOf(c.tokens.access_token).jti, type: 'JTI' })).status).toBe(201);
    const revoked = await p.replyTo(dial(service, c.tokens.access_token));
    expect(revoked.type).toBe(T.Error);
    expect(revoked.body.toString()).toMatch(/access token is not accepted/);
  });

  it('with a service session, the access token (when a JWT) must be the session identity\'s, on circuits and terminators alike', async () => {
    const mine = await oidc.cCert({ cert: client.cert, key: client.key });
    const theirs = await oidc.cCert({ cert: host.cert, key: host.key });
    const session = (await n.c.call('POST', `${CLIENT}/sessions`, { bearer: mine.tokens.access_token, body: { serviceId: service, type: 'Dial' } })).body.data.token as string;
    await routed(dial(session, mine.tokens.access_token));
    const wrong = await p.replyTo(dial(session, theirs.tokens.access_token));
    expect(wrong.type).toBe(T.Error);
    expect(wrong.body.toString()).toMatch(/not the same identity/);
    const bind = (await n.c.call('POST', `${CLIENT}/sessions`, { bearer: theirs.tokens.access_token, body: { serviceId: service, type: 'Bind' } })).body.data.token as string;
    const t = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'sid-x-' + Math.random().toString(36).slice(2), sessionToken: bind, apiSessionToken: mine.tokens.access_token, fingerprints: [fp(host.cert)], peerData: {} })));
    expect(decode(Schemas.CreateTerminatorV2Response, t.body)).toMatchObject({ result: 4 });
    const ok = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'sid-y-' + Math.random().toString(36).slice(2), sessionToken: bind, apiSessionToken: theirs.tokens.access_token, fingerprints: [fp(host.cert)], peerData: {} })));
    expect(decode(Schemas.CreateTerminatorV2Response, ok.body).result ?? 0).toBe(0);
  });
});

describe('a 2.1 router: its capabilities, and Connect-V2 (CreateCircuitV3)', () => {
  // A 2.1 router sends its capability mask as 8 bytes (bits 1, 2, 4, 5, 6 and 62), and for an OIDC session
  // whose dial it authorized from the data model, CreateCircuitV3 (20222): identity and service ids, the
  // access token, no service session (ctrl-channel-2.x.md section 1.5d). Every header is written here by hand.
  let r21: EnrolledRouter;
  let p: EdgePeer;
  let result: { headers: Map<number, Buffer> };
  let oidc: ReturnType<typeof oidcClient>;
  let host: Member;
  let client: Member;
  let service: string;
  const hostKey = Buffer.alloc(32, 5);
  const u32le = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24]);
  const stringMap = (b: Buffer) => {
    const out: Record<string, string> = {};
    let at = 4;
    for (let i = 0; i < b.readUInt32LE(0); i++) {
      const kl = b.readUInt32LE(at);
      const k = b.subarray(at + 4, at + 4 + kl).toString();
      const vl = b.readUInt32LE(at + 4 + kl);
      out[k] = b.subarray(at + 8 + kl, at + 8 + kl + vl).toString();
      at += 8 + kl + vl;
    }
    return out;
  };

  beforeAll(async () => {
    oidc = oidcClient(n.c);
    service = await n.service('cv3', { encryptionRequired: true });
    host = await n.identity('cv3-host', ['cv3-hosts']);
    client = await n.identity('cv3-client', ['cv3-clients']);
    r21 = await enrollRouter(n, 'upstream-21');
    const c = await connectRouter2x(ctrlPort, r21, { version: UPSTREAM_21_VERSION, capabilities: ROUTER_21_CAPABILITIES });
    p = c.p;
    result = c.result!;
    const bind = await n.session(host, service, 'Bind');
    const t = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'cv3-' + Math.random().toString(36).slice(2), sessionToken: bind, apiSessionToken: host.token, fingerprints: [fp(host.cert)], peerData: { 1003: hostKey } })));
    expect(decode(Schemas.CreateTerminatorV2Response, t.body).result ?? 0).toBe(0);
  }, 60_000);
  afterAll(() => p.close());

  it('its 8-byte mask is read as one big integer: stored, named with 2.1\'s names, and told the same controller mask (nothing more to announce)', async () => {
    expect(result.headers.get(2)).toEqual(Buffer.from([1]));
    // Connect-V2 needs no controller bit (upstream's 2.1 controller sends bits 1-6; GroupedCtrlChan, 5, stays clear here).
    expect(result.headers.get(1002)).toEqual(Buffer.from([0x5e]));
    const detail = (await n.api('GET', `/edge-routers/${r21.id}`)).body.data;
    expect(detail).toMatchObject({ version: 'v2.1.0-pre2', capabilities: ['MULTI_CHANNEL', 'CONNECT_V2', 'SERVICE_SUBSCRIPTIONS', 'POSTURE_CHECKS', 'BIND_SUCCESS'] });
    // A JSON number: bit 62 alone survives the rounding (capabilities above are exact).
    expect(detail.capabilitiesMask).toBe(2 ** 62);
    expect((await n.c.running.ctx.store.db.selectFrom('routers').select('capabilitiesMask').where('id', '=', r21.id).executeTakeFirstOrThrow()).capabilitiesMask).toBe(String(0x4000000000000076n));
  });

  it('its data model gives config types their target (2.1); configs of a type for routers are not sent (ztc assigns routers none)', async () => {
    const forRouters = (await n.api('POST', '/config-types', { name: 'cv3-router-type', schema: {}, target: 'router' })).body.data.id;
    const routerCfg = (await n.api('POST', '/configs', { name: 'cv3-router-cfg', configTypeId: forRouters, data: { a: 1 } })).body.data.id;
    const forServices = (await n.api('POST', '/config-types', { name: 'cv3-service-type', schema: {} })).body.data.id;
    const serviceCfg = (await n.api('POST', '/configs', { name: 'cv3-service-cfg', configTypeId: forServices, data: { b: 2 } })).body.data.id;
    p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { subscriptionDurationSeconds: 300, subscriptionId: 'cv3' }));
    const state = decode(RdmSchemas.DataState, (await p.next((f) => f.type === T2.DataState)).body);
    const events = state.events as Record<string, any>[];
    expect(events.find((e) => e.configType?.id === forRouters)?.configType).toMatchObject({ name: 'cv3-router-type', target: 'router' });
    expect(events.find((e) => e.configType?.id === forServices)?.configType).toMatchObject({ target: 'service' });
    expect(events.some((e) => e.config?.id === routerCfg)).toBe(false);
    expect(events.some((e) => e.config?.id === serviceCfg)).toBe(true);
  });

  it('routes an OIDC session\'s dial: the access token checked, the Route sent, and CreateCircuitV3Response with V2\'s headers', async () => {
    const { tokens } = await oidc.cCert({ cert: client.cert, key: client.key });
    const dialerKey = Buffer.alloc(32, 9);
    const seq = p.send(T.CreateCircuitV3, createCircuitV3Headers({ identityId: client.id, serviceId: service, apiSessionToken: tokens.access_token, fingerprints: [fp(client.cert)], peerData: [[1003, dialerKey], [1115, Buffer.from(client.id)], [1116, Buffer.from(client.name)]] }));
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    expect(route.egress.peerData['1003']).toEqual(dialerKey);
    // The host is told the identity the access token is for.
    expect(route.egress.peerData['1008'].toString()).toBe('cv3-client');
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    const answer = await p.replyTo(seq);
    expect(answer.type, answer.body.toString()).toBe(T.CreateCircuitV3Response);
    expect(answer.headers.get(11)!.toString()).toBe(route.circuitId);
    expect(answer.headers.get(12)!.toString()).toBe(route.forwards.find((f: { dstType?: number }) => (f.dstType ?? 0) === 1).srcAddress);
    expect(readBytesMap(answer.headers.get(10)!).get(1003)).toEqual(hostKey);
    expect(stringMap(answer.headers.get(13)!)).toEqual({ serviceId: service, clientId: client.id, hostId: host.id });
    // A circuit like any other: listed, and a Fault ends it.
    await expect.poll(async () => (await n.c.call('GET', `/fabric/v1/circuits/${route.circuitId}`, { token: n.admin })).status, { timeout: 5000 }).toBe(200);
    p.send(T.Fault, [], encode(Schemas.Fault, { subject: 0, id: route.circuitId }));
    expect(decode(Schemas.Unroute, (await p.next((f) => f.type === T.Unroute)).body)).toMatchObject({ circuitId: route.circuitId });
    // A circuit id the router chose is the circuit's.
    const chosen = 'cv3-circuit-' + Math.random().toString(36).slice(2);
    const again = p.send(T.CreateCircuitV3, createCircuitV3Headers({ identityId: client.id, serviceId: service, apiSessionToken: tokens.access_token, fingerprints: [fp(client.cert)], peerData: [[1003, dialerKey]], circuitId: chosen }));
    const route2 = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    expect(route2.circuitId).toBe(chosen);
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(chosen));
    expect((await p.replyTo(again)).headers.get(11)!.toString()).toBe(chosen);
  });

  /** A refused CreateCircuitV3: Error (20002) with the text, the edge error code (1014) and the retry hint (18), both uint32 LE. */
  async function refused(h: Parameters<typeof createCircuitV3Headers>[0], code: number, hint: number, text: RegExp) {
    const r = await p.replyTo(p.send(T.CreateCircuitV3, createCircuitV3Headers(h)));
    expect(r.type, r.body.toString()).toBe(T.Error);
    expect(r.body.toString()).toMatch(text);
    expect(r.headers.get(1014)).toEqual(u32le(code));
    expect(r.headers.get(18)).toEqual(u32le(hint));
  }

  it('refuses a legacy (zt-session) API session: connect-v2 is for OIDC sessions', async () => {
    await refused({ identityId: client.id, serviceId: service, apiSessionToken: client.token, fingerprints: [fp(client.cert)] }, 2, 2, /connect-v2 requires an OIDC API session/);
    await refused({ identityId: client.id, serviceId: service, apiSessionToken: '', fingerprints: [fp(client.cert)] }, 2, 2, /no API session token/);
  });

  it('refuses an access token whose sub is not the identity the router names (GHSA-7868-235p-7497), and one not signed by our keys', async () => {
    const { tokens } = await oidc.cCert({ cert: client.cert, key: client.key });
    await refused({ identityId: host.id, serviceId: service, apiSessionToken: tokens.access_token, fingerprints: [fp(host.cert)] }, 2, 2, /not the dialing identity's/);
    const [h, body] = tokens.access_token.split('.');
    await refused({ identityId: client.id, serviceId: service, apiSessionToken: `${h}.${body}.${Buffer.alloc(64, 1).toString('base64url')}`, fingerprints: [fp(client.cert)] }, 2, 2, /access token is not accepted/);
  });

  it('refuses a revoked token (JTI) and a revoked identity (IDENTITY, tokens issued before)', async () => {
    const a = await oidc.cCert({ cert: client.cert, key: client.key });
    expect((await n.api('POST', '/revocations', { id: claimsOf(a.tokens.access_token).jti, type: 'JTI' })).status).toBe(201);
    await refused({ identityId: client.id, serviceId: service, apiSessionToken: a.tokens.access_token, fingerprints: [fp(client.cert)] }, 2, 2, /access token is not accepted/);
    const other = await n.identity('cv3-client-2', ['cv3-clients']);
    const b = await oidc.cCert({ cert: other.cert, key: other.key });
    expect((await n.api('POST', '/revocations', { id: other.id, type: 'IDENTITY' })).status).toBe(201);
    await refused({ identityId: other.id, serviceId: service, apiSessionToken: b.tokens.access_token, fingerprints: [fp(other.cert)] }, 2, 2, /access token is not accepted/);
  });

  it('refuses an identity no Dial policy lets dial the service, and a service that does not exist (not retried)', async () => {
    // The host may bind it, not dial it.
    const { tokens } = await oidc.cCert({ cert: host.cert, key: host.key });
    await refused({ identityId: host.id, serviceId: service, apiSessionToken: tokens.access_token, fingerprints: [fp(host.cert)] }, 6, 3, /no service policy grants 'cv3-host' Dial on 'cv3'/);
    await refused({ identityId: host.id, serviceId: 'no-such-service', apiSessionToken: tokens.access_token, fingerprints: [fp(host.cert)] }, 6, 3, /no service has the id 'no-such-service'/);
  });

  it('refuses an identity whose edge router policies do not give it this router', async () => {
    const far = await n.identity('cv3-far', ['cv3-clients']);
    const { tokens } = await oidc.cCert({ cert: far.cert, key: far.key });
    const erps = (await n.api('GET', '/edge-router-policies?limit=100')).body.data as { id: string; identityRoles: string[]; edgeRouterRoles: string[] }[];
    const saved = erps.filter((e) => e.identityRoles.includes('#all'));
    // Only routers other than this one for everybody, for this test: the policies that give all routers go for a moment.
    for (const e of saved) expect((await n.api('PATCH', `/edge-router-policies/${e.id}`, { identityRoles: ['#not-cv3-far'] })).status).toBe(200);
    try {
      await refused({ identityId: far.id, serviceId: service, apiSessionToken: tokens.access_token, fingerprints: [fp(far.cert)] }, 5, 2, /invalid edge router for session/);
    } finally {
      for (const e of saved) await n.api('PATCH', `/edge-router-policies/${e.id}`, { identityRoles: e.identityRoles });
    }
  });
});

// Last in this file: it moves the controller's clock a day on.
describe('a 2.x router: an OIDC session that runs out is revoked too', () => {
  it('the expiry sweep revokes it (an access token exchanged for another may outlive it)', async () => {
    const oidc = oidcClient(n.c);
    const who = await n.identity('rev-2x-expiry', []);
    const c = await connectRouter2x(ctrlPort, await enrollRouter(n, 'upstream-2x-expiry'));
    c.p.send(T2.SubscribeToDataModelRequest, [], encode(RdmSchemas.SubscribeToDataModelRequest, { subscriptionDurationSeconds: 300, subscriptionId: 'exp' }));
    await c.p.next((f) => f.type === T2.DataState);
    const { tokens } = await oidc.cCert({ cert: who.cert, key: who.key });
    const asid = claimsOf(tokens.access_token).z_asid as string;
    // Past its refresh token's 24 h: the sweep (every minute in a running controller) ends it.
    n.c.clock.advance(24 * 3_600_000 + 60_000);
    const at = Date.now();
    await expireApiSessions(n.c.running.ctx);
    const m = await c.p.next((f) => f.type === T2.DataStateChangeSet && (decode(RdmSchemas.ChangeSet, f.body).changes as Record<string, any>[]).some((e) => e.revocation?.id === asid), 4000);
    expect(Date.now() - at).toBeLessThan(2000);
    expect((decode(RdmSchemas.ChangeSet, m.body).changes as Record<string, any>[]).find((e) => e.revocation?.id === asid)!.revocation.type).toBe('API_SESSION');
    c.p.close();
  });
});
