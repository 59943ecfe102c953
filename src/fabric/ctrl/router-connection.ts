// One upstream OpenZiti router on the control channel (ctrl-channel-1.1.md sections 2 and 4): what it
// asks (terminators, circuits, link verification), what it reports (links, faults), and the heartbeats it
// expects echoed. The network it belongs to (network.ts) holds terminators, links and circuits across routers.
import { randomUUID } from 'node:crypto';
import type { Channel } from '../channel/channel.js';
import { bool, message, readUint, str, u32, type Message } from '../channel/codec.js';
import { ContentType, EdgeError, Header } from '../channel/messages.js';
import { decode, encode } from '../channel/protobuf.js';
import { accessTokenOf, sessionTokenForServiceId, touchApiSessions } from '../../model/data-plane.js';
import { routerFingerprint } from '../../model/fabric-state.js';
import { fingerprintOf } from '../../model/pki/certs.js';
import { adoptRouterCerts, issueRouterExtension, type RouterCerts } from '../../model/pki/router-enroll.js';
import { failureOf, reportDialFailure } from '../dial-failures.js';
import { checkServiceSession, Refused } from '../session-checks.js';
import type { Precedence } from '../terminators.js';
import type { Ctx } from '../../model/context.js';
import type { FabricLog } from '../log.js';
import type { RouterDataModelSender } from '../rdm/sender.js';
import type { RouterNetwork } from './network.js';
import { CtrlHeader, CtrlType, FaultSubject, Schemas, TerminatorResult } from './messages.js';
import { RdmSchemas } from '../rdm/schemas.js';
import type { RouteStep } from './paths.js';
import { decodeBytesMap, decodeStrings, encodeBytesMap, encodeStringMap } from './wire.js';
import { handleTunnelerMessage, isTunnelerMessage } from './tunnel/tunneler.js';

const PRECEDENCE: Precedence[] = ['default', 'required', 'failed'];

/** The fingerprint of a PEM's first certificate (the leaf of a chain); '' for what is no certificate. */
function leafFingerprint(pem: string): string {
  try {
    return fingerprintOf(pem);
  } catch {
    return '';
  }
}
/** How often one connection may have certificates signed (a 1.1 router asks again after 35 s without an answer). */
const EXTEND_EVERY_MS = 30_000;
const PUBLIC_KEY = 1003;
/** How long a router has to answer a terminator validation (upstream's router gives its checks 30 s). */
const VALIDATE_TIMEOUT_MS = 35_000;

/** What a router's hello says of it (headers 4, 10, 11). */
export interface RouterHello {
  /** Its version (the first field of header 4), and the whole header (Version|Revision|BuildDate|OS|Arch). */
  version: string;
  versionInfo: string;
  /** Its link listeners, as its peers are told them (ctrl_pb.Listener). */
  listeners: Record<string, unknown>[];
  /** Whether it manages its own links (upstream: version 0.32.1 or later, or a development build). */
  managesLinks: boolean;
  /** A 2.x router (grouped channel, 2.x headers): it is served the router data model and JWT sessions. */
  v2: boolean;
  /** Its capability mask (header 1002, a big-endian integer; 2.x), or null when its hello has none (1.x). */
  capabilitiesMask: bigint | null;
}

/** The control channel's server as a router connection uses it (listener.ts CtrlServer is the one). */
export interface RouterHost {
  readonly ctx: Ctx;
  readonly log: FabricLog;
  readonly network: RouterNetwork;
  readonly rdm: Pick<RouterDataModelSender, 'subscribe'>;
  idsOfTokens(tokens: string[]): string[];
  heartbeat(tokens: string[]): void;
  connectEvents(conn: RouterConn, body: { events: { identityId?: string; isConnected?: boolean }[]; fullState?: boolean }): void;
  resync(conn: RouterConn): Promise<void>;
}

export class RouterConn {
  private routeWaiters = new Map<string, (m: Message) => void>();
  closed = false;
  /** Its full API-session state went out: later additions are sent to it one by one. */
  synced = false;
  /** Its peers were told it is up (after `ready`): only such routers are named to others. */
  announced = false;
  private heard?: () => void;
  /**
   * Resolves at the router's first message after our hello reply (or when it closes): only then is its
   * side of the channel up, so it can verify the links its peers dial to it. Told of peers earlier, a
   * peer's link dial arrives first and is refused ("unable to verify link ... no controller available";
   * seen by hand with two `ziti router run` 1.1.10, 40 ms apart).
   */
  readonly ready = new Promise<void>((resolve) => (this.heard = resolve));

  /** New certificates signed for the router and sent to it, waiting for it to confirm it has them. */
  private extension?: { certs: RouterCerts; at: number };
  private extending = false;

  constructor(
    readonly server: RouterHost,
    readonly routerId: string,
    readonly name: string,
    readonly channel: Channel,
    readonly hello: RouterHello,
    /** The stored fingerprint of the client certificate this connection was made with. */
    private fingerprint: string,
  ) {}

  private get ctx() {
    return this.server.ctx;
  }

  private get network() {
    return this.server.network;
  }

  send(type: number, body: Buffer, headers: [number, Buffer][] = []) {
    this.channel.send(message(type, headers, body));
  }

  handle(m: Message) {
    this.heard?.();
    // Heartbeats ride on any message (header 5); the router marks us unresponsive without the echo.
    const beat = m.headers.get(Header.Heartbeat);
    if (beat) this.channel.send(message(ContentType.Heartbeat, [[Header.HeartbeatResponse, beat]]));
    const failed = (what: string) => (e: unknown) => this.server.log.warn({ err: String(e), router: this.name }, `ctrl: ${what} failed`);
    switch (m.type) {
      case ContentType.Ping:
      case ContentType.Latency:
        this.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
        return;
      case CtrlType.CreateTerminatorV2Request:
        return void this.createTerminator(m).catch(failed('terminator'));
      case CtrlType.CreateCircuitV2Request:
        return void this.createCircuit(m).catch(failed('circuit'));
      case CtrlType.CreateTerminatorRequest:
        return void this.createTerminatorV1(m).catch(failed('terminator'));
      case CtrlType.CreateCircuitRequest:
        return void this.createCircuitV1(m).catch(failed('circuit'));
      case CtrlType.RouteResult: {
        const key = `${m.body.toString('utf8')}/${readUint(m.headers.get(CtrlHeader.RouteAttempt))}`;
        this.routeWaiters.get(key)?.(m);
        return;
      }
      case CtrlType.Fault:
        return void this.fault(m).catch(failed('fault'));
      case CtrlType.RemoveTerminatorsRequest:
        return void this.removeRequested(m).catch(failed('terminator removal'));
      case CtrlType.RouterLinks:
        return void this.linksReported(m).catch(failed('link report'));
      case CtrlType.VerifyRouter:
        return void this.verifyRouter(m).catch(failed('router verification'));
      case CtrlType.CircuitConfirmation:
        return this.confirmCircuits(m);
      case CtrlType.Metrics:
        return void this.metrics(m).catch(failed('metrics'));
      case CtrlType.EnrollmentExtendRouterRequest:
        return void this.extendCerts(m).catch(failed('certificate renewal'));
      case CtrlType.EnrollmentExtendRouterVerifyRequest:
        return void this.verifyCerts(m).catch(failed('certificate renewal'));
      case CtrlType.SubscribeToDataModelRequest:
        return void this.server.rdm.subscribe(this, decode(RdmSchemas.SubscribeToDataModelRequest, m.body)).catch(failed('data model subscription'));
      case CtrlType.RequestClientReSync:
        return void this.server.resync(this).catch(failed('resync'));
      case CtrlType.ApiSessionHeartbeat: {
        const { tokens } = decode(Schemas.ApiSessionHeartbeat, m.body);
        void touchApiSessions(this.ctx, this.server.idsOfTokens(tokens as string[])).catch(() => {});
        // 2.x routers say who is connected in ConnectEvents (a heartbeat would keep one that left online for minutes).
        if (!this.hello.v2) this.server.heartbeat(tokens as string[]);
        return;
      }
      case CtrlType.UpdateRouterInterfaces:
        // A 2.x router's network interfaces: acknowledged (it reports again until one is), not kept.
        this.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
        return;
      case CtrlType.ConnectEvents:
        return this.server.connectEvents(this, decode(Schemas.ConnectEvents, m.body) as { events: { identityId?: string; isConnected?: boolean }[]; fullState?: boolean });
      case CtrlType.UpdateTerminatorRequest:
        return void this.updateTerminator(m).catch(failed('terminator update'));
      default:
        // The router's own tunneler (its `tunnel` listener binding): one handler per message in ./tunnel/.
        if (isTunnelerMessage(m.type)) return void handleTunnelerMessage(this, m).catch(failed('tunneler request'));
        // The reconnecting dialer's probe (-33), traces, newer types: dropped, as upstream drops what it does not know.
        return;
    }
  }

  /**
   * A router renewing its certificates (a week before they expire, or `ziti router run --extend`):
   * both CSRs signed as at enrollment and sent back as EnrollmentCertsResponse (not a reply). With
   * requireVerification (what 1.1 routers send) they become the router's only once it confirms it
   * holds them (verifyCerts); its current certificate names it until then, so a router that never
   * got them keeps working. Upstream answers a refused request with nothing (the router gives up
   * after 35 s and asks again later); said in our log. One request at a time, at most one every 30 s
   * (each costs two signatures).
   */
  private async extendCerts(m: Message) {
    const now = Date.now();
    if (this.extending || (this.extension && now - this.extension.at < EXTEND_EVERY_MS)) {
      this.server.log.warn({ router: this.name }, 'ctrl: a certificate renewal request came while another was open: ignored');
      return;
    }
    this.extending = true;
    try {
      const req = decode(Schemas.EnrollmentExtendRouterRequest, m.body);
      const certs = await issueRouterExtension(this.ctx, this.routerId, req.clientCertCsr, req.serverCertCsr);
      if (req.requireVerification) this.extension = { certs, at: now };
      else await this.adopt(certs);
      // Each certificate with the intermediate that issued it (router-enroll.ts issueRouterCerts), as at enrollment.
      this.send(CtrlType.EnrollmentCertsResponse, encode(Schemas.EnrollmentCertsResponse, { clientCertPem: certs.chain.client, serverCertPem: certs.chain.server, caCertsPem: this.ctx.pki.caBundlePem }));
      this.server.log.info({ router: this.name, verify: !!req.requireVerification }, 'ctrl: signed renewed router certificates');
    } finally {
      this.extending = false;
    }
  }

  /** The router holds the renewed certificates: they become its own, answered with an empty Error (upstream's success). */
  private async verifyCerts(m: Message) {
    const answer = (code = '', text = '') => this.channel.reply(m, message(CtrlType.Error, [], encode(Schemas.EdgeErrorBody, { code, message: text })));
    const { clientCertPem } = decode(Schemas.EnrollmentExtendRouterVerifyRequest, m.body);
    if (!clientCertPem) return answer('MISSING_CLIENT_PEM', 'request did not contain a client certificate PEM');
    const pending = this.extension;
    if (!pending) return answer('INVALID_ROUTER_STATE', 'the router has no outstanding certificate renewal');
    // Upstream's router sends back the PEM it was sent (the chain); its first certificate must be the one signed.
    if (leafFingerprint(String(clientCertPem)) !== pending.certs.client.fingerprint) return answer('INVALID_CLIENT_PEM', 'the certificate is not the one signed for this renewal');
    try {
      await this.adopt(pending.certs);
    } catch (e) {
      return answer('VERIFY_ERROR', (e as Error).message);
    }
    this.extension = undefined;
    answer();
  }

  private async adopt(certs: RouterCerts) {
    await adoptRouterCerts(this.ctx, this.routerId, this.fingerprint, certs, 'extend.router.enrollment');
    this.fingerprint = certs.client.fingerprint;
    this.server.log.info({ router: this.name, fingerprint: certs.client.fingerprint }, 'ctrl: the router renewed its certificates');
  }

  private refuse(to: Message, text: string, code: number) {
    this.channel.reply(to, message(CtrlType.Error, [[CtrlHeader.EdgeErrorCode, u32(code)]], str(text)));
  }

  /** CreateTerminatorV2 (section 2.5): the router answered its SDK already; we validate, store and confirm. */
  private async createTerminator(m: Message) {
    const req = decode(Schemas.CreateTerminatorV2Request, m.body);
    const answer = (result: number, msg = '') => this.channel.reply(m, message(CtrlType.CreateTerminatorV2Response, [], encode(Schemas.CreateTerminatorV2Response, { terminatorId: req.address, result, msg })));
    if (!req.address) return answer(TerminatorResult.FailedOther, 'no terminator address');
    try {
      await this.storeTerminator(req.address, req.address, req);
      answer(TerminatorResult.Success);
    } catch (e) {
      answer(e instanceof Refused && e.code !== EdgeError.Internal ? TerminatorResult.FailedInvalidSession : TerminatorResult.FailedOther, (e as Error).message);
    }
  }

  /**
   * UpdateTerminatorRequest (an SDK's UpdateBind: a new cost or precedence): the Bind session's checks,
   * then the terminator, which must be this router's and the session's service's, changes. Answered with
   * an empty UpdateTerminatorResponse, or an Error saying why.
   */
  private async updateTerminator(m: Message) {
    const req = decode(Schemas.UpdateTerminatorRequest, m.body);
    try {
      const s = await checkServiceSession(this.ctx, String(req.sessionToken ?? ''), 'Bind', (req.fingerprints as string[]).map((f) => f.toLowerCase()), this.routerId, undefined, this.hello.v2);
      // Made through another controller on the database, perhaps (network.ts adoptStored).
      if (!this.network.terminators.has(String(req.terminatorId ?? ''))) await this.network.adoptStored({ ids: [String(req.terminatorId ?? '')] });
      const t = this.network.terminators.get(String(req.terminatorId ?? ''));
      if (!t || t.routerId !== this.routerId || t.serviceId !== s.serviceId) throw new Refused(`invalid terminator: no terminator '${String(req.terminatorId ?? '')}' of this session's service on this router`, EdgeError.InvalidTerminator);
      if (req.updateCost && Number(req.cost ?? 0) > 0xffff) throw new Refused(`invalid cost ${String(req.cost)}: a terminator's cost is 0 to 65535`, EdgeError.InvalidCost);
      await this.network.updateTerminator(t.id, { ...(req.updateCost ? { cost: Number(req.cost ?? 0) } : {}), ...(req.updatePrecedence ? { precedence: PRECEDENCE[Number(req.precedence ?? 0)] ?? 'default' } : {}) });
      this.channel.reply(m, message(CtrlType.UpdateTerminatorResponse, []));
    } catch (e) {
      this.refuse(m, (e as Error).message, e instanceof Refused ? e.code : EdgeError.Internal);
    }
  }

  /** The legacy CreateTerminatorRequest: we name the terminator; the router reaches it as `hosted:<token>`. */
  private async createTerminatorV1(m: Message) {
    const req = decode(Schemas.CreateTerminatorRequest, m.body);
    try {
      const id = randomUUID();
      await this.storeTerminator(id, `hosted:${req.sessionToken ?? ''}`, req);
      this.channel.reply(m, message(CtrlType.CreateTerminatorResponse, [], str(id)));
    } catch (e) {
      this.refuse(m, (e as Error).message, e instanceof Refused ? e.code : EdgeError.Internal);
    }
  }

  private async storeTerminator(id: string, address: string, req: Record<string, unknown>) {
    const s = await checkServiceSession(this.ctx, String(req.sessionToken ?? ''), 'Bind', (req.fingerprints as string[]).map((f) => f.toLowerCase()), this.routerId, undefined, this.hello.v2);
    await this.checkAccessToken(req.apiSessionToken as string | undefined, s.identityId);
    if (Number(req.cost ?? 0) > 0xffff) throw new Refused(`invalid cost ${String(req.cost)}: a terminator's cost is 0 to 65535`, EdgeError.Internal);
    await this.network.addTerminator({
      id,
      address,
      routerId: this.routerId,
      serviceId: s.serviceId,
      hostId: s.identityId,
      instanceId: String(req.instanceId ?? ''),
      cost: Number(req.cost ?? 0),
      precedence: PRECEDENCE[Number(req.precedence ?? 0)] ?? 'default',
      sessionId: s.id,
      apiSessionId: s.apiSessionId,
      token: String(req.sessionToken),
      peerData: new Map(Object.entries((req.peerData ?? {}) as Record<string, Buffer>).map(([k, v]) => [Number(k), v])),
      dials: 0,
    });
  }

  /** CreateCircuitV2 (section 2.6): everything in headers; the answer too. */
  private async createCircuit(m: Message) {
    try {
      const routed = await this.routeCircuit({
        token: m.headers.get(CtrlHeader.CircuitSessionToken)?.toString('utf8') ?? '',
        fingerprints: decodeStrings(m.headers.get(CtrlHeader.CircuitFingerprints)),
        instanceId: m.headers.get(CtrlHeader.CircuitTerminatorInstanceId)?.toString('utf8') || undefined,
        peerData: decodeBytesMap(m.headers.get(CtrlHeader.CircuitPeerData)),
        apiSessionToken: m.headers.get(CtrlHeader.CircuitApiSessionToken)?.toString('utf8') || undefined,
      });
      this.channel.reply(
        m,
        message(CtrlType.CreateCircuitV2Response, [
          [CtrlHeader.ResponseCircuitId, str(routed.circuit.id)],
          [CtrlHeader.ResponseAddress, str(routed.circuit.ingressId)],
          [CtrlHeader.ResponsePeerData, encodeBytesMap(routed.peerData)],
          [CtrlHeader.ResponseTags, encodeStringMap(routed.tags)],
        ]),
      );
    } catch (e) {
      this.dialFailed(m, e);
    }
  }

  /** A CreateCircuit refused: the router is told why (its SDK hears the text), and the failure is reported (dial-failures.ts). */
  private dialFailed(m: Message, e: unknown) {
    const f = failureOf(e);
    this.refuse(m, f.reason, f.code);
    reportDialFailure(this.ctx, this.server.log, { routerId: this.routerId, routerName: this.name, reason: f.reason, code: f.code, cause: f.cause, ...f.who });
  }

  /** The legacy CreateCircuitRequest: the same circuit, request and answer as protobuf bodies. */
  private async createCircuitV1(m: Message) {
    const req = decode(Schemas.CreateCircuitRequest, m.body);
    try {
      const peerData = new Map(Object.entries((req.peerData ?? {}) as Record<string, Buffer>).map(([k, v]) => [Number(k), v]));
      const routed = await this.routeCircuit({ token: req.sessionToken ?? '', fingerprints: req.fingerprints as string[], instanceId: req.terminatorInstanceId || undefined, peerData, apiSessionToken: req.apiSessionToken || undefined });
      const body = encode(Schemas.CreateCircuitResponse, { circuitId: routed.circuit.id, address: routed.circuit.ingressId, peerData: routed.peerData, tags: routed.tags });
      this.channel.reply(m, message(CtrlType.CreateCircuitResponse, [], body));
    } catch (e) {
      this.dialFailed(m, e);
    }
  }

  /** Both forms: the Dial session's checks, then the network routes it (across routers when it must). */
  private async routeCircuit(r: { token: string; fingerprints: string[]; instanceId?: string; peerData: Map<number, Buffer>; apiSessionToken?: string }) {
    // A 2.x router's Connect may name the service by id instead of a service session (OIDC sessions):
    // the API session's Dial session of that service stands for it.
    const byServiceId = this.hello.v2 ? await sessionTokenForServiceId(this.ctx, r.token, r.apiSessionToken, 'Dial').catch((e: Error) => {
      throw new Refused(`invalid session: ${e.message}`, EdgeError.InvalidSession);
    }) : null;
    if (byServiceId) r.token = byServiceId;
    // A 2.x router judges a JWT session's posture itself (from what the SDK sends it).
    const s = await checkServiceSession(this.ctx, r.token, 'Dial', r.fingerprints.map((f) => f.toLowerCase()), this.routerId, undefined, this.hello.v2);
    await this.checkAccessToken(r.apiSessionToken, s.identityId);
    if (s.encryptionRequired && !r.peerData.has(PUBLIC_KEY)) throw new Refused('encryption required on service, initiator did not send public header', EdgeError.EncryptionDataMissing, undefined, { serviceId: s.serviceId, serviceName: s.serviceName, identityId: s.identityId, identityName: s.identityName });
    // The caller the host is told is the identity the session belongs to, never what the dialer claims.
    r.peerData.set(Header.CallerId, Buffer.from(s.identityName, 'utf8'));
    return this.network.createCircuit(this, { serviceId: s.serviceId, serviceName: s.serviceName, clientId: s.identityId, clientName: s.identityName, sessionId: s.id, apiSessionId: s.apiSessionId, token: r.token, instanceId: r.instanceId, encryptionRequired: s.encryptionRequired, peerData: r.peerData });
  }

  /** The SDK's OIDC access token, when the router sent one (apiSessionToken): valid, and the session's identity's. */
  private async checkAccessToken(token: string | undefined, identityId: string) {
    await accessTokenOf(this.ctx, token, identityId).catch((e: Error) => {
      throw new Refused(e.message, EdgeError.InvalidApiSession);
    });
  }

  /** Send this router its part of a circuit's path and wait for its RouteResult for that attempt. */
  route(circuitId: string, attempt: number, step: RouteStep, tags: Record<string, string>, timeoutMs: number): Promise<Message | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    const key = `${circuitId}/${attempt}`;
    return new Promise((resolve) => {
      const done = (r: Message | undefined) => {
        clearTimeout(timer);
        this.routeWaiters.delete(key);
        resolve(r);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      this.routeWaiters.set(key, done);
      this.send(CtrlType.Route, encode(Schemas.Route, { circuitId, attempt, egress: step.egress, forwards: step.forwards, timeout: BigInt(timeoutMs) * 1_000_000n, tags }));
    });
  }

  /**
   * Ask the router which of `terminators` (kept for it across its reconnect or our restart) it still
   * holds (ValidateTerminatorsV2, fixInvalid as upstream sends it: the router marks those it has as
   * established and creates none again); those it does not are removed. A router that does not answer
   * keeps them: a dial to one it lost fails at its egress, which removes it then.
   */
  async validateTerminators(terminators: { id: string; address: string; binding?: string }[]) {
    if (!terminators.length || this.closed) return;
    const body = encode(Schemas.ValidateTerminatorsV2Request, { terminators: terminators.map((t) => ({ id: t.id, binding: t.binding ?? 'edge', address: t.address })), fixInvalid: true });
    let reply: Message;
    try {
      reply = await this.channel.request(message(CtrlType.ValidateTerminatorsV2Request, [], body), VALIDATE_TIMEOUT_MS);
    } catch (e) {
      if (!this.closed) this.server.log.info({ router: this.name, err: String(e) }, 'ctrl: the router did not answer the terminator validation: its terminators are kept');
      return;
    }
    if (reply.type !== CtrlType.ValidateTerminatorsV2Response) return;
    const states = decode(Schemas.ValidateTerminatorsV2Response, reply.body).states as Record<string, { valid?: boolean; reason?: number; detail?: string }>;
    const asked = new Set(terminators.map((t) => t.id));
    const invalid = Object.entries(states).filter(([id, st]) => asked.has(id) && !st.valid);
    for (const [id, st] of invalid) this.server.log.info({ router: this.name, terminator: id, reason: ['unknown binding', 'unknown terminator', 'bad state'][Number(st.reason ?? 0)] ?? String(st.reason), detail: st.detail }, 'ctrl: the router no longer holds a terminator: removed');
    if (invalid.length) await this.network.removeTerminators(invalid.map(([id]) => id));
    this.server.log.info({ router: this.name, kept: terminators.length - invalid.length, removed: invalid.length }, 'ctrl: terminators validated with their router');
  }

  unroute(circuitId: string, now = true) {
    if (!this.closed) this.send(CtrlType.Unroute, encode(Schemas.Unroute, { circuitId, now }));
  }

  /** An end of a circuit closed, or a link failed (section 2.7): the circuit ends, or moves off the link. */
  private async fault(m: Message) {
    const f = decode(Schemas.Fault, m.body);
    if (!f.id) return;
    // proto3 leaves zero values out: no subject on the wire is IngressFault.
    const subject = Number(f.subject ?? FaultSubject.IngressFault);
    if (subject === FaultSubject.LinkFault || subject === FaultSubject.LinkDuplicateFault) return this.network.linkGone(f.id, f.iteration === undefined ? undefined : Number(f.iteration), subject === FaultSubject.LinkDuplicateFault);
    const c = this.network.circuits.get(f.id);
    if (c) this.network.endCircuit(c, true);
    // A circuit this controller does not know (routed before a restart): the reporting router drops it.
    else this.unroute(f.id);
  }

  private async removeRequested(m: Message) {
    const { terminatorIds } = decode(Schemas.RemoveTerminatorsRequest, m.body);
    // Those made through another controller on the database are taken first (network.ts adoptStored).
    await this.network.adoptStored({ ids: terminatorIds as string[] });
    const mine = new Set(this.network.terminatorsOf(this.routerId));
    await this.network.removeTerminators((terminatorIds as string[]).filter((id) => mine.has(id)));
    this.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
  }

  /** RouterLinks: the links this router dialed (sent, possibly empty, on every connect, then per new link). */
  private async linksReported(m: Message) {
    const { links } = decode(Schemas.RouterLinks, m.body);
    for (const l of links as Record<string, unknown>[]) {
      if (!l.id || !l.destRouterId) continue;
      await this.network.linkReported({
        id: String(l.id),
        src: this.routerId,
        dst: String(l.destRouterId),
        protocol: String(l.linkProtocol ?? ''),
        dialAddress: String(l.dialAddress ?? ''),
        iteration: Number(l.iteration ?? 0),
        staticCost: 1,
        srcLatencyNs: 0,
        dstLatencyNs: 0,
        cost: 1,
      });
    }
  }

  /** VerifyRouter: a link's listening side asks whether the router that dialed it is who it says. */
  private async verifyRouter(m: Message) {
    const { routerId, fingerprints } = decode(Schemas.VerifyRouter, m.body);
    const known = routerId ? await routerFingerprint(this.ctx, String(routerId)) : null;
    const ok = !!known && (fingerprints as string[]).some((f) => f.toLowerCase() === known);
    const text = ok ? 'router verified' : known ? `router ${routerId} presented a certificate that is not its enrolled one` : `no enrolled router ${routerId}`;
    if (!ok) this.server.log.info({ router: this.name, peer: routerId, reason: text }, 'ctrl: refused a link');
    this.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(ok)]], str(text)));
  }

  /**
   * Metrics (every `metrics.reportInterval`, a minute by default): of all a router measures, path costs
   * use its links' latency, as upstream's do (`link.<id>.latency` plus `queue_time`, means in ns).
   */
  private async metrics(m: Message) {
    const { histograms } = decode(Schemas.Metrics, m.body);
    const mean = (name: string) => {
      const h = (histograms as Record<string, Buffer>)[name];
      return h ? Number(decode(Schemas.Histogram, h).mean ?? 0) : undefined;
    };
    for (const link of this.network.linksOf(this.routerId)) {
      const latency = mean(`link.${link.id}.latency`);
      if (latency === undefined) continue;
      await this.network.linkLatency(link, this.routerId, latency + (mean(`link.${link.id}.queue_time`) ?? 0));
    }
  }

  /** CircuitConfirmation: idle circuits the router still forwards; those this controller does not know end there. */
  private confirmCircuits(m: Message) {
    const { circuitIds } = decode(Schemas.CircuitConfirmation, m.body);
    for (const id of circuitIds as string[]) if (!this.network.circuits.has(id)) this.unroute(id);
  }

  /** The connection ended: waiting routes fail at once; the network forgets what lived on this router. */
  ended() {
    this.closed = true;
    this.heard?.();
    for (const w of [...this.routeWaiters.values()]) w(message(CtrlType.RouteResult, [[CtrlHeader.RouteError, str('the router disconnected')]]));
  }
}
