// The control channel against a test router written from ../shared/reference/ctrl-channel-1.1.md (the
// framing of test/peers/edge-sdk.ts, bodies in the protobuf wire format): what an unmodified OpenZiti
// 1.1 router sends and expects, checked both ways. (By hand, `ziti router run` 1.1.10 did the same
// against ztc and carried the C SDK's echo: README.)
import { createPublicKey, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { hashSecret } from '../../src/model/ids.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { newKeyAndCsr } from '../../src/model/pki/csr.js';
import { CLIENT } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, i32, readBytesMap, strings, T, type EnrolledRouter } from '../peers/ctrl-router.js';
import { EdgePeer, le32, type Frame } from '../peers/edge-sdk.js';

let n: TestNetwork;
let ctrlPort: number;
let routerId: string;
let router: EnrolledRouter;
let host: Member;
let client: Member;
let service: string;
beforeAll(async () => {
  n = await startNetwork({ headersTimeoutSeconds: 2 });
  ctrlPort = n.c.running.fabric!.ctrlPort!;
  // An upstream router's enrollment: two CSRs, the client one named by the router id.
  router = await enrollRouter(n, 'upstream-1');
  routerId = router.id;
  service = await n.service('up-echo', { encryptionRequired: true });
  host = await n.identity('up-host', ['up-echo-hosts']);
  client = await n.identity('up-client', ['up-echo-clients']);
}, 60_000);
afterAll(() => n.close());

function connect(o: { cert?: string; key?: string; id?: string } = {}): Promise<{ p: EdgePeer; result?: Frame }> {
  return connectRouter(ctrlPort, router, o);
}

describe('an upstream router on the control channel', () => {
  let p: EdgePeer;

  it('is accepted with its enrolled certificate: Result with version and capabilities, ServerHello, every API session', async () => {
    const c = await connect();
    p = c.p;
    expect(c.result!.headers.get(1)!.readInt32LE(0)).toBe(-1);
    expect(c.result!.headers.get(2)).toEqual(Buffer.from([1]));
    expect(c.result!.headers.get(4)!.toString().split('|')).toHaveLength(5);
    expect(c.result!.headers.get(12)).toEqual(Buffer.from([0x0e]));
    // ServerHello, answered with the router's edge listener: what SDKs are then given.
    const hello = await p.next((f) => f.type === T.ServerHello);
    p.send(T.ClientHello, [[1, i32(hello.seq)]], encode(Schemas.ClientHello, { version: 'v1.1.10', hostname: 'localhost', protocols: ['tls'], listeners: [{ address: 'tls:0.0.0.0:3999', advertise: { value: 'tls:localhost:3999', protocol: 'tls', hostname: 'localhost', port: 3999 } }] }));
    const full = await p.next((f) => f.type === T.ApiSessionAdded);
    expect(full.headers.get(1013)!.toString()).toBe('instant');
    expect(JSON.parse(full.headers.get(1014)!.toString())).toMatchObject({ isLast: true, sequence: 0 });
    const added = decode(Schemas.ApiSessionAdded, full.body);
    expect(added.isFullState).toBe(true);
    const mine = (added.apiSessions as { token: string; id: string; certFingerprints: string[] }[]).find((s) => s.token === host.token);
    expect(mine?.certFingerprints).toContain(fp(host.cert));
    await expect.poll(async () => (await n.api('GET', `/edge-routers/${routerId}`)).body.data, { timeout: 3000 }).toMatchObject({ isOnline: true, supportedProtocols: { tls: 'tls://localhost:3999' } });
    // Heartbeats are echoed.
    p.send(T.Heartbeat, [[5, Buffer.from('0102030405060708', 'hex')]]);
    expect((await p.next((f) => f.headers.has(6))).headers.get(6)).toEqual(Buffer.from('0102030405060708', 'hex'));
  });

  it('stays connected past the hello deadline', async () => {
    await new Promise((r) => setTimeout(r, 2500));
    expect(p.closed).toBe(false);
  });

  it('hears of a new login within a second or two', async () => {
    const late = await n.identity('up-late', []);
    const f = await p.next((x) => x.type === T.ApiSessionAdded && decode(Schemas.ApiSessionAdded, x.body).apiSessions.some((s: { token: string }) => s.token === late.token), 4000);
    // proto3 leaves false out: no isFullState on the wire.
    expect(decode(Schemas.ApiSessionAdded, f.body).isFullState ?? false).toBe(false);
  });

  it('hears of an API session older than the newest it was told of (a late commit, a lagging controller clock)', async () => {
    const ctx = n.c.running.ctx;
    const token = 'late-' + Math.random().toString(36).slice(2);
    const made = new Date(Date.now() - 10_000).toISOString();
    await ctx.store.db
      .insertInto('apiSessions')
      .values({ id: token, createdAt: made, updatedAt: made, tags: '{}', tokenHash: hashSecret(token), tokenSealed: ctx.sealer.seal(token), identityId: client.id, authenticatorId: '', ipAddress: '127.0.0.1', configTypes: '[]', isMfaRequired: 0, isMfaComplete: 0, isCertExtendable: 0, lastActivityAt: new Date().toISOString() })
      .execute();
    const f = await p.next((x) => x.type === T.ApiSessionAdded && decode(Schemas.ApiSessionAdded, x.body).apiSessions.some((s: { token: string }) => s.token === token), 4000);
    expect(f).toBeTruthy();
  });

  let terminatorId: string;
  it('stores a terminator from CreateTerminatorV2 and confirms it; refuses a Dial session', async () => {
    const bind = await n.session(host, service, 'Bind');
    terminatorId = 'term-' + Math.random().toString(36).slice(2);
    const seq = p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: terminatorId, sessionToken: bind, fingerprints: [fp(host.cert)], peerData: { 1003: Buffer.alloc(32, 5) }, cost: 3 }));
    const r = await p.replyTo(seq);
    expect(r.type).toBe(T.CreateTerminatorV2Response);
    const confirmed = decode(Schemas.CreateTerminatorV2Response, r.body);
    expect(confirmed.terminatorId).toBe(terminatorId);
    expect(confirmed.result ?? 0).toBe(0);
    const listed = (await n.api('GET', `/terminators/${terminatorId}`)).body.data;
    expect(listed).toMatchObject({ routerId, binding: 'edge', address: terminatorId, cost: 3 });

    const dialToken = await n.session(client, service, 'Dial');
    const wrong = p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'nope', sessionToken: dialToken, fingerprints: [fp(client.cert)] }));
    const refused = decode(Schemas.CreateTerminatorV2Response, (await p.replyTo(wrong)).body);
    expect(refused.result).toBe(4);
    expect(refused.msg).toMatch(/incorrect session type/);
  });

  it('takes a terminator again whose row a previous run of the controller left (a router resends them after a restart)', async () => {
    const bind = await n.session(host, service, 'Bind');
    const id = 'left-' + Math.random().toString(36).slice(2);
    const now = new Date().toISOString();
    await n.c.running.ctx.store.db
      .insertInto('terminators')
      .values({ id, createdAt: now, updatedAt: now, tags: '{}', serviceId: service, routerId, binding: 'edge', address: id, identity: '', identitySecret: null, cost: 0, precedence: 'default', hostId: host.id })
      .execute();
    const r = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: id, sessionToken: bind, fingerprints: [fp(host.cert)], peerData: { 1003: Buffer.alloc(32, 5) } })));
    expect(decode(Schemas.CreateTerminatorV2Response, r.body).result ?? 0).toBe(0);
    expect((await p.replyTo(p.send(T.RemoveTerminators, [], encode(Schemas.RemoveTerminatorsRequest, { terminatorIds: [id] })))).headers.get(2)).toEqual(Buffer.from([1]));
  });

  it('routes a circuit on the router: CreateCircuitV2 -> Route -> RouteResult -> the ingress, the host key and tags', async () => {
    const dialToken = await n.session(client, service, 'Dial');
    const dialerKey = Buffer.alloc(32, 6);
    const seq = p.send(T.CreateCircuitV2, [[11, Buffer.from(dialToken)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)], [10, bytesMap([[1003, dialerKey]])]]);
    const route = await p.next((f) => f.type === T.Route);
    const r = decode(Schemas.Route, route.body);
    expect(r.egress).toMatchObject({ binding: 'edge', destination: terminatorId });
    expect(r.egress.peerData['1003']).toEqual(dialerKey);
    expect(r.forwards).toHaveLength(2);
    const ingress = r.forwards.find((f: { dstType?: number }) => f.dstType === 1).srcAddress;
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(r.circuitId));
    const answer = await p.replyTo(seq);
    expect(answer.type).toBe(T.CreateCircuitV2Response);
    expect(answer.headers.get(11)!.toString()).toBe(r.circuitId);
    expect(answer.headers.get(12)!.toString()).toBe(ingress);
    expect(readBytesMap(answer.headers.get(10)!).get(1003)).toEqual(Buffer.alloc(32, 5));
    // The circuit's end: a Fault, answered with Unroute.
    p.send(T.Fault, [], encode(Schemas.Fault, { subject: 0, id: r.circuitId }));
    const unroute = await p.next((f) => f.type === T.Unroute);
    expect(decode(Schemas.Unroute, unroute.body)).toMatchObject({ circuitId: r.circuitId, now: true });
    // Without the dialer's key on an encrypted service: an Error with the edge code.
    const noKey = p.send(T.CreateCircuitV2, [[11, Buffer.from(dialToken)], [12, strings([fp(client.cert)])]]);
    const err = await p.replyTo(noKey);
    expect(err.type).toBe(T.Error);
    expect(err.body.toString()).toMatch(/encryption required/);
    expect(err.headers.get(1014)!.readUInt32LE(0)).toBe(11);
  });

  it('takes the legacy forms too: CreateTerminatorRequest (answered with our id, routed to hosted:<token>) and CreateCircuitRequest', async () => {
    const bind = await n.session(host, service, 'Bind');
    const made = await p.replyTo(p.send(20207, [], encode(Schemas.CreateTerminatorRequest, { sessionToken: bind, fingerprints: [fp(host.cert)], peerData: { 1003: Buffer.alloc(32, 7) }, instanceId: 'legacy' })));
    expect(made.type).toBe(20208);
    const id = made.body.toString();
    // The store lists it by id; the Bind token stays out of the API.
    expect((await n.api('GET', `/terminators/${id}`)).body.data).toMatchObject({ routerId, address: id, identity: 'legacy' });
    const dial = await n.session(client, service, 'Dial');
    const seq = p.send(20205, [], encode(Schemas.CreateCircuitRequest, { sessionToken: dial, fingerprints: [fp(client.cert)], terminatorInstanceId: 'legacy', peerData: { 1003: Buffer.alloc(32, 8) } }));
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    expect(route.egress.destination).toBe(`hosted:${bind}`);
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    const answer = await p.replyTo(seq);
    expect(answer.type).toBe(20206);
    const body = decode(Schemas.CreateCircuitResponse, answer.body);
    expect(body).toMatchObject({ circuitId: route.circuitId, tags: { serviceId: service, clientId: client.id, hostId: host.id } });
    expect(body.peerData['1003']).toEqual(Buffer.alloc(32, 7));
    expect(route.forwards.find((f: { dstType?: number }) => f.dstType === 1).srcAddress).toBe(body.address);
    // Refusals are the same Error (20002) as for the V2 forms.
    const refused = await p.replyTo(p.send(20207, [], encode(Schemas.CreateTerminatorRequest, { sessionToken: dial, fingerprints: [fp(client.cert)] })));
    expect(refused.type).toBe(T.Error);
    expect(refused.body.toString()).toMatch(/incorrect session type/);
  });

  it('tells the router of ended sessions and API sessions; removes terminators it asks to', async () => {
    const sessions = (await n.api('GET', `/sessions?filter=${encodeURIComponent(`identityId = "${host.id}"`)}`)).body.data as { id: string; token: string }[];
    for (const s of sessions) await n.api('DELETE', `/sessions/${s.id}`);
    const removed = await p.next((f) => f.type === T.SessionRemoved, 4000);
    expect(decode(Schemas.SessionRemoved, removed.body).tokens.length).toBeGreaterThan(0);
    await expect.poll(async () => (await n.api('GET', `/terminators?filter=${encodeURIComponent(`id = "${terminatorId}"`)}`)).body.data.length, { timeout: 3000 }).toBe(0);
    expect((await n.c.call('DELETE', `${CLIENT}/current-api-session`, { token: host.token })).status).toBe(200);
    const gone = await p.next((f) => f.type === T.ApiSessionRemoved && decode(Schemas.ApiSessionRemoved, f.body).tokens.includes(host.token), 4000);
    expect(gone).toBeTruthy();
    const seq = p.send(T.RemoveTerminators, [], encode(Schemas.RemoveTerminatorsRequest, { terminatorIds: ['unknown'] }));
    expect((await p.replyTo(seq)).headers.get(2)).toEqual(Buffer.from([1]));
  });

  it('goes offline when it disconnects', async () => {
    p.close();
    await expect.poll(async () => (await n.api('GET', `/edge-routers/${routerId}`)).body.data.isOnline, { timeout: 3000 }).toBe(false);
  });

  it('is disconnected when deleted or disabled through the API, as upstream does', async () => {
    for (const [name, change] of [['upstream-disabled', 'disable'], ['upstream-deleted', 'delete']] as const) {
      const other = await enrollRouter(n, name);
      const c = await connectRouter(ctrlPort, other);
      expect(c.result, name).toBeDefined();
      if (change === 'disable') expect((await n.api('PATCH', `/edge-routers/${other.id}`, { disabled: true })).status).toBe(200);
      else expect((await n.api('DELETE', `/edge-routers/${other.id}`)).status).toBe(200);
      await c.p.whenClosed(4000);
    }
  });

  it('refuses another certificate for the router\'s id, an unknown id, and a certificate from another CA', async () => {
    const wrongCert = await connect({ cert: client.cert, key: client.key });
    expect(wrongCert.result).toBeUndefined();
    await wrongCert.p.whenClosed(3000);
    const unknown = await connect({ id: 'no-such-router' });
    expect(unknown.result).toBeUndefined();
    await unknown.p.whenClosed(3000);
    const { selfSignedCert } = await import('../helpers/certs.js');
    const foreign = selfSignedCert(routerId);
    const other = await connect({ cert: foreign.certPem, key: foreign.keyPem });
    expect(other.result).toBeUndefined();
    await other.p.whenClosed(3000);
  });

  it('renews its certificates over the channel: signed, sent, its own once it confirms them (as `ziti router run --extend`)', async () => {
    const r = await enrollRouter(n, 'upstream-renewing');
    const fingerprintNow = async () => (await n.c.running.ctx.store.db.selectFrom('routers').select('fingerprint').where('id', '=', r.id).executeTakeFirstOrThrow()).fingerprint;
    const enrolled = await fingerprintNow();
    const { p: q, result } = await connectRouter(ctrlPort, r);
    expect(result).toBeDefined();
    // What a 1.1 router sends a week before expiry: two CSRs for its own keys, verification required.
    const clientCsr = newKeyAndCsr(r.id);
    const serverCsr = newKeyAndCsr(r.id, ['localhost', 'renewed.example']);
    q.send(T.EnrollmentExtendRouterRequest, [], encode(Schemas.EnrollmentExtendRouterRequest, { clientCertCsr: clientCsr.csrPem, serverCertCsr: serverCsr.csrPem, requireVerification: true }));
    // Signing waits for the crypto pool: a net well above a loaded machine's wait (seen over 5 s in a full run beside benches).
    const certs = decode(Schemas.EnrollmentCertsResponse, (await q.next((f) => f.type === T.EnrollmentCertsResponse, 30_000)).body) as { clientCertPem: string; serverCertPem: string; caCertsPem: string };
    const [clientCert, serverCert] = [new X509Certificate(certs.clientCertPem), new X509Certificate(certs.serverCertPem)];
    const intermediate = new X509Certificate(n.c.running.ctx.pki.intermediatePem);
    expect(clientCert.subject).toContain(`CN=${r.id}`);
    expect(clientCert.checkIssued(intermediate) && clientCert.verify(intermediate.publicKey)).toBe(true);
    expect(clientCert.publicKey.export({ type: 'spki', format: 'pem' })).toBe(createPublicKey(clientCsr.keyPem).export({ type: 'spki', format: 'pem' }));
    expect(serverCert.subjectAltName).toContain('DNS:renewed.example');
    expect(certs.caCertsPem).toBe(n.c.running.ctx.pki.caBundlePem);
    // Each as a chain, as at enrollment: the leaf, then the intermediate that issued it.
    for (const pem of [certs.clientCertPem, certs.serverCertPem]) expect(pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/g)?.[1]).toBe(n.c.running.ctx.pki.intermediatePem);
    // Not its own yet: the enrolled certificate still names it, until it confirms.
    expect(await fingerprintNow()).toBe(enrolled);
    const verify = (pem: string) => q.replyTo(q.send(T.EnrollmentExtendRouterVerifyRequest, [], encode(Schemas.EnrollmentExtendRouterVerifyRequest, { clientCertPem: pem })));
    const wrong = await verify(r.cert);
    expect(wrong.type).toBe(T.Error);
    expect(decode(Schemas.EdgeErrorBody, wrong.body)).toMatchObject({ code: 'INVALID_CLIENT_PEM' });
    expect(await fingerprintNow()).toBe(enrolled);
    const right = await verify(certs.clientCertPem);
    expect(right.type).toBe(T.Error);
    expect(decode(Schemas.EdgeErrorBody, right.body).code ?? '').toBe('');
    expect(await fingerprintNow()).toBe(fp(certs.clientCertPem));
    // A second confirmation finds nothing open.
    expect(decode(Schemas.EdgeErrorBody, (await verify(certs.clientCertPem)).body)).toMatchObject({ code: 'INVALID_ROUTER_STATE' });
    const audit = await n.c.running.ctx.store.db.selectFrom('auditEvents').select('body').where('entityId', '=', r.id).execute();
    expect(audit.some((a) => a.body.includes('extend.router.enrollment'))).toBe(true);
    q.close();
    // The next connection needs the new certificate; the old one no longer names the router.
    const old = await connectRouter(ctrlPort, r);
    expect(old.result).toBeUndefined();
    await old.p.whenClosed(3000);
    const renewed = await connectRouter(ctrlPort, { ...r, cert: certs.clientCertPem, key: clientCsr.keyPem });
    expect(renewed.result).toBeDefined();
    // A request that cannot be signed is not answered (as upstream), and the router stays connected.
    renewed.p.send(T.EnrollmentExtendRouterRequest, [], encode(Schemas.EnrollmentExtendRouterRequest, { clientCertCsr: 'not a CSR', serverCertCsr: '', requireVerification: true }));
    await expect(renewed.p.next((f) => f.type === T.EnrollmentCertsResponse, 1500)).rejects.toThrow();
    expect(renewed.p.closed).toBe(false);
    expect(await fingerprintNow()).toBe(fp(certs.clientCertPem));
    renewed.p.close();
  });
});
