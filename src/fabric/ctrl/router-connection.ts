// One upstream OpenZiti router on the control channel (ctrl-channel-1.1.md section 4.1): its terminators
// (CreateTerminatorV2), the circuits it asks for (CreateCircuitV2 -> Route -> RouteResult), faults, and the
// heartbeats it expects echoed. Dials reach the terminators of the router they arrive at: without links,
// a circuit is one router.
import { randomUUID } from 'node:crypto';
import { addTerminator, removeTerminators, touchApiSessions } from '../../model/data-plane.js';
import type { Channel } from '../channel/channel.js';
import { bool, message, readUint, str, u32, type Message } from '../channel/codec.js';
import { ContentType, EdgeError, Header } from '../channel/messages.js';
import { decode, encode } from '../channel/protobuf.js';
import { checkServiceSession, Refused } from '../session-checks.js';
import type { Precedence } from '../terminators.js';
import type { CtrlServer } from './listener.js';
import { CtrlHeader, CtrlType, DestType, FaultSubject, Schemas, TerminatorResult } from './messages.js';
import { decodeBytesMap, decodeStrings, encodeBytesMap, encodeStringMap } from './wire.js';

/** How long a router has to build a route (upstream's routeTimeout). */
const ROUTE_TIMEOUT_MS = 10_000;
const PUBLIC_KEY = 1003;

interface UpstreamTerminator {
  id: string;
  serviceId: string;
  hostId: string;
  instanceId: string;
  cost: number;
  precedence: Precedence;
  sessionId: string;
  token: string;
  peerData: Map<number, Buffer>;
}

interface UpstreamCircuit {
  id: string;
  sessionId: string;
  token: string;
}

const RANK: Record<Precedence, number> = { required: 0, default: 1, failed: 2 };
const PRECEDENCE: Precedence[] = ['default', 'required', 'failed'];

export class RouterConn {
  readonly terminators = new Map<string, UpstreamTerminator>();
  readonly circuits = new Map<string, UpstreamCircuit>();
  private routeWaiters = new Map<string, (m: Message) => void>();
  closed = false;

  constructor(
    readonly server: CtrlServer,
    readonly routerId: string,
    readonly name: string,
    readonly channel: Channel,
  ) {}

  private get ctx() {
    return this.server.ctx;
  }

  send(type: number, body: Buffer, headers: [number, Buffer][] = []) {
    this.channel.send(message(type, headers, body));
  }

  handle(m: Message) {
    // Heartbeats ride on any message (header 5); the router marks us unresponsive without the echo.
    const beat = m.headers.get(Header.Heartbeat);
    if (beat) this.channel.send(message(ContentType.Heartbeat, [[Header.HeartbeatResponse, beat]]));
    switch (m.type) {
      case ContentType.Ping:
      case ContentType.Latency:
        this.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
        return;
      case CtrlType.CreateTerminatorV2Request:
        return void this.createTerminator(m).catch((e) => this.server.log.warn({ err: String(e), router: this.name }, 'ctrl: terminator failed'));
      case CtrlType.CreateCircuitV2Request:
        return void this.createCircuit(m).catch((e) => this.server.log.warn({ err: String(e), router: this.name }, 'ctrl: circuit failed'));
      case CtrlType.RouteResult: {
        const id = m.body.toString('utf8');
        this.routeWaiters.get(id)?.(m);
        return;
      }
      case CtrlType.Fault:
        return this.fault(m);
      case CtrlType.RemoveTerminatorsRequest:
        return void this.removeRequested(m);
      case CtrlType.ApiSessionHeartbeat: {
        const { tokens } = decode(Schemas.ApiSessionHeartbeat, m.body);
        void touchApiSessions(this.ctx, this.server.idsOfTokens(tokens as string[])).catch(() => {});
        return;
      }
      case CtrlType.CircuitConfirmation:
        // Circuits this controller does not know: the router may drop their forwarding state.
        return;
      default:
        // Metrics, RouterLinks (no links yet), the reconnecting dialer's probe (-33), newer types: dropped, as upstream drops what it does not know.
        return;
    }
  }

  private refuse(to: Message, text: string, code: number) {
    this.channel.reply(to, message(CtrlType.Error, [[CtrlHeader.EdgeErrorCode, u32(code)]], str(text)));
  }

  /** CreateTerminatorV2 (section 2.5): the router answered its SDK already; we validate, store and confirm. */
  private async createTerminator(m: Message) {
    const req = decode(Schemas.CreateTerminatorV2Request, m.body);
    const answer = (result: number, msg = '') => this.channel.reply(m, message(CtrlType.CreateTerminatorV2Response, [], encode(Schemas.CreateTerminatorV2Response, { terminatorId: req.address, result, msg })));
    if (!req.address) return answer(TerminatorResult.FailedOther, 'no terminator address');
    let s;
    try {
      s = await checkServiceSession(this.ctx, req.sessionToken ?? '', 'Bind', (req.fingerprints as string[]).map((f) => f.toLowerCase()), this.routerId);
    } catch (e) {
      return answer(e instanceof Refused && e.code !== EdgeError.Internal ? TerminatorResult.FailedInvalidSession : TerminatorResult.FailedOther, (e as Error).message);
    }
    const peerData = new Map<number, Buffer>(Object.entries((req.peerData ?? {}) as Record<string, Buffer>).map(([k, v]) => [Number(k), v]));
    const t: UpstreamTerminator = {
      id: req.address,
      serviceId: s.serviceId,
      hostId: s.identityId,
      instanceId: req.instanceId ?? '',
      cost: Number(req.cost ?? 0),
      precedence: PRECEDENCE[Number(req.precedence ?? 0)] ?? 'default',
      sessionId: s.id,
      token: req.sessionToken,
      peerData,
    };
    // A router that reconnects sends its terminators again: the same id is the same terminator.
    if (this.terminators.has(t.id)) await removeTerminators(this.ctx, [t.id]);
    await addTerminator(this.ctx, { id: t.id, serviceId: t.serviceId, routerId: this.routerId, hostId: t.hostId, instanceId: t.instanceId, cost: t.cost, precedence: t.precedence });
    this.terminators.set(t.id, t);
    answer(TerminatorResult.Success);
  }

  /** CreateCircuitV2 (section 2.6), on one router: Route it, wait for its RouteResult, answer the ingress. */
  private async createCircuit(m: Message) {
    const token = m.headers.get(CtrlHeader.CircuitSessionToken)?.toString('utf8') ?? '';
    const fingerprints = decodeStrings(m.headers.get(CtrlHeader.CircuitFingerprints)).map((f) => f.toLowerCase());
    const instance = m.headers.get(CtrlHeader.CircuitTerminatorInstanceId)?.toString('utf8') || undefined;
    const peerData = decodeBytesMap(m.headers.get(CtrlHeader.CircuitPeerData));
    let s;
    try {
      s = await checkServiceSession(this.ctx, token, 'Dial', fingerprints, this.routerId);
      if (s.encryptionRequired && !peerData.has(PUBLIC_KEY)) throw new Refused('encryption required on service, initiator did not send public header', EdgeError.EncryptionDataMissing);
    } catch (e) {
      return this.refuse(m, (e as Error).message, e instanceof Refused ? e.code : EdgeError.Internal);
    }
    let t: UpstreamTerminator | undefined;
    for (const c of this.terminators.values()) {
      if (c.serviceId !== s.serviceId || (instance && c.instanceId !== instance)) continue;
      if (!t || RANK[c.precedence] < RANK[t.precedence] || (RANK[c.precedence] === RANK[t.precedence] && c.cost < t.cost)) t = c;
    }
    if (!t) return this.refuse(m, `service '${s.serviceName}' has no terminator on router '${this.name}' (there are no links between routers yet)`, EdgeError.InvalidTerminator);
    if (s.encryptionRequired && !t.peerData.has(PUBLIC_KEY)) return this.refuse(m, 'encryption required on service, terminator did not send public header', EdgeError.EncryptionDataMissing);

    const circuitId = randomUUID();
    const ingressId = randomUUID();
    const egressId = randomUUID();
    const tags = { serviceId: s.serviceId, clientId: s.identityId, hostId: t.hostId };
    const route = encode(Schemas.Route, {
      circuitId,
      attempt: 0,
      egress: { binding: 'edge', address: egressId, destination: t.id, peerData },
      forwards: [
        { srcAddress: ingressId, dstAddress: egressId, dstType: DestType.End },
        { srcAddress: egressId, dstAddress: ingressId, dstType: DestType.Start },
      ],
      timeout: BigInt(ROUTE_TIMEOUT_MS) * 1_000_000n,
      tags,
    });
    const result = await new Promise<Message | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), ROUTE_TIMEOUT_MS);
      this.routeWaiters.set(circuitId, (r) => {
        if (readUint(r.headers.get(CtrlHeader.RouteAttempt)) !== 0) return;
        clearTimeout(timer);
        resolve(r);
      });
      this.send(CtrlType.Route, route);
    });
    this.routeWaiters.delete(circuitId);
    if (!result || !result.headers.has(CtrlHeader.RouteSuccess)) {
      if (result) this.send(CtrlType.Unroute, encode(Schemas.Unroute, { circuitId, now: true }));
      const why = result?.headers.get(CtrlHeader.RouteError)?.toString('utf8') ?? `no route result within ${ROUTE_TIMEOUT_MS / 1000} s`;
      return this.refuse(m, `failed to establish connection with terminator address ${t.id}: ${why}`, EdgeError.InvalidTerminator);
    }
    // The host's key (stored with the terminator), then what the egress reported back from its SDK.
    const replyPeerData = new Map(t.peerData);
    for (const [k, v] of result.headers) if (k >= 1000 && !(k >= 1101 && k <= 1113)) replyPeerData.set(k, v);
    this.circuits.set(circuitId, { id: circuitId, sessionId: s.id, token });
    this.channel.reply(
      m,
      message(CtrlType.CreateCircuitV2Response, [
        [CtrlHeader.ResponseCircuitId, str(circuitId)],
        [CtrlHeader.ResponseAddress, str(ingressId)],
        [CtrlHeader.ResponsePeerData, encodeBytesMap(replyPeerData)],
        [CtrlHeader.ResponseTags, encodeStringMap(tags)],
      ]),
    );
  }

  /** An end of a circuit closed (or a link failed): tell the router to drop the circuit's forwarding. */
  private fault(m: Message) {
    const f = decode(Schemas.Fault, m.body);
    // proto3 leaves zero values out: no subject on the wire is IngressFault.
    const subject = Number(f.subject ?? FaultSubject.IngressFault);
    if (f.id && (subject === FaultSubject.IngressFault || subject === FaultSubject.EgressFault || subject === FaultSubject.ForwardFault || subject === FaultSubject.UnknownOwnerForwardFault)) {
      this.circuits.delete(f.id);
      this.send(CtrlType.Unroute, encode(Schemas.Unroute, { circuitId: f.id, now: true }));
    }
  }

  private async removeRequested(m: Message) {
    const { terminatorIds } = decode(Schemas.RemoveTerminatorsRequest, m.body);
    const ids = (terminatorIds as string[]).filter((id) => this.terminators.delete(id));
    await removeTerminators(this.ctx, ids).catch(() => {});
    this.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
  }

  /** Service sessions that ended: the router closes what used them (SessionRemoved). */
  async sessionsEnded(ended: Set<string>) {
    const tokens = new Set<string>();
    const gone: string[] = [];
    for (const t of this.terminators.values()) {
      if (!ended.has(t.sessionId)) continue;
      tokens.add(t.token);
      gone.push(t.id);
      this.terminators.delete(t.id);
    }
    for (const c of this.circuits.values()) {
      if (!ended.has(c.sessionId)) continue;
      tokens.add(c.token);
      this.circuits.delete(c.id);
    }
    if (tokens.size) this.send(CtrlType.SessionRemoved, encode(Schemas.SessionRemoved, { tokens: [...tokens] }));
    await removeTerminators(this.ctx, gone).catch(() => {});
  }

  sessionIds(): string[] {
    return [...[...this.terminators.values()].map((t) => t.sessionId), ...[...this.circuits.values()].map((c) => c.sessionId)];
  }

  /** The connection ended: its terminators go (the router sends them again when it reconnects). */
  async ended() {
    this.closed = true;
    for (const w of this.routeWaiters.values()) w(message(CtrlType.RouteResult, [[CtrlHeader.RouteAttempt, u32(0)], [CtrlHeader.RouteError, str('the router disconnected')]]));
    const ids = [...this.terminators.keys()];
    this.terminators.clear();
    await removeTerminators(this.ctx, ids).catch(() => {});
  }
}
