// One SDK's edge channel: its API session (from the hello), latency probes, and its virtual connections:
// dials (Connect), binds (Bind/Unbind/UpdateBind) and the connections hosted for those binds. The
// protocol is ../shared/reference/edge-protocol.md; section numbers below point there.
import { randomUUID } from 'node:crypto';
import type { EdgeApiSession, EdgeSession } from '../../model/data-plane.js';
import { apiSessionForEdge } from '../../model/data-plane.js';
import { looksLikeJwt } from '../../model/auth/oidc/tokens.js';
import { newId } from '../../model/ids.js';
import type { Channel } from '../channel/channel.js';
import { bool, message, readBool, readUint, str, u32, type Message } from '../channel/codec.js';
import { ContentType, EdgeError, Header } from '../channel/messages.js';
import { closeSide, connected, endpoint, link, relay, type Circuit, type Endpoint } from '../circuits.js';
import type { Fabric } from '../fabric.js';
import { failureOf } from '../dial-failures.js';
import { checkServiceSession, Refused } from '../session-checks.js';
import { TransportEgress } from './transport-egress.js';
import type { Precedence, Terminator } from '../terminators.js';

/** How long a host has to answer a Dial (upstream: 5 s). */
export const DIAL_TIMEOUT_MS = 5000;

export class EdgeConn {
  readonly id = newId();
  /** Dial and hosted sides by conn id. */
  private sides = new Map<number, Endpoint>();
  /** Conn ids of binds (terminators) on this channel. */
  private binds = new Set<number>();
  private nextRouterId = 2 ** 31;
  closed = false;

  constructor(
    readonly fabric: Fabric,
    readonly channel: Channel,
    readonly apiSession: EdgeApiSession,
    /** SHA-1 of every certificate the SDK presented (leaf and chain): what Dial and Bind checks compare. */
    readonly fingerprints: string[],
  ) {}

  /** Authenticate a hello (2.3): the API session's token, and a presented certificate that belongs to it. */
  static async authenticate(fabric: Fabric, hello: Message, fingerprints: string[]): Promise<EdgeApiSession | string> {
    const token = hello.headers.get(Header.SessionToken)?.toString('utf8');
    if (!token) return 'the hello carries no API session token (header 1002)';
    const s = await apiSessionForEdge(fabric.ctx, token);
    if (!s) return 'unknown or ended API session';
    if (!fingerprints.some((f) => s.fingerprints.has(f))) return `no presented certificate belongs to the API session of '${s.identityName}'`;
    return s;
  }

  get sideCount() {
    return this.sides.size;
  }

  sessionIds(): string[] {
    return [...this.sides.values()].map((s) => s.sessionId);
  }

  sidesOfSession(sessionId: string): Endpoint[] {
    return [...this.sides.values()].filter((s) => s.sessionId === sessionId);
  }

  forget(ep: Endpoint) {
    if (this.sides.get(ep.connId) !== ep) return;
    this.sides.delete(ep.connId);
    this.lastForgotten = ep.connId;
  }

  /** The conn id of the side forgotten last (a StateClosed went one way or the other for it). */
  private lastForgotten?: number;

  /**
   * A frame this channel's SDK ignores, to make it read again (edge/legacy-c-sdk.ts): StateConnected on
   * a binding or a connected side (a C SDK 0.29 ignores it in states Bound and Connected), else a second
   * StateClosed on the side closed last (ignored once it is closed).
   */
  nudgeFrame(): Message | undefined {
    const state = (type: number, connId: number, body?: Buffer) => message(type, [[Header.ConnId, u32(connId)], [Header.Seq, u32(0)]], body);
    for (const id of this.binds) if (this.fabric.terminators.ofBinding(this, id).length) return state(ContentType.StateConnected, id);
    for (const side of this.sides.values()) if (side.connected && !side.closed) return state(ContentType.StateConnected, side.connId);
    return this.lastForgotten === undefined ? undefined : state(ContentType.StateClosed, this.lastForgotten, str('closed'));
  }

  handle(m: Message) {
    switch (m.type) {
      case ContentType.Latency:
      case ContentType.Ping:
        // Any reply cancels the C SDK's 10 s probe timeout; header 128 (its timestamp) is reflected by reply().
        this.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
        return;
      case ContentType.Data:
        return this.onData(m);
      case ContentType.Connect:
        return void this.onConnect(m).catch((e) => this.fabric.log.warn({ err: String(e) }, 'edge: dial failed unexpectedly'));
      case ContentType.Bind:
        return void this.onBind(m).catch((e) => this.fabric.log.warn({ err: String(e) }, 'edge: bind failed unexpectedly'));
      case ContentType.Unbind:
        return this.unbind(readUint(m.headers.get(Header.ConnId)), m.body.toString('utf8'));
      case ContentType.UpdateBind:
        return this.onUpdateBind(m);
      case ContentType.StateClosed:
        return this.onStateClosed(m);
      case ContentType.TraceRoute:
        return this.onTraceRoute(m);
      case ContentType.UpdateToken:
        return void this.onUpdateToken(m).catch((e) => this.fabric.log.warn({ err: String(e) }, 'edge: token update failed unexpectedly'));
      default:
        // HealthEvent, UpdateToken, PostureResponse, a stray reply, newer types: dropped, as upstream does.
        return;
    }
  }

  private onData(m: Message) {
    const id = readUint(m.headers.get(Header.ConnId));
    const side = id === undefined ? undefined : this.sides.get(id);
    if (!side) return; // unknown conn id: dropped (upstream does the same)
    this.fabric.bytesIn += m.body.length;
    relay(side, m);
  }

  private onStateClosed(m: Message) {
    const id = readUint(m.headers.get(Header.ConnId));
    if (id === undefined) return;
    const side = this.sides.get(id);
    if (side) return closeSide(side, '', false);
    // The C SDK 0.29 unbinds by closing the bind's conn id (5.3); any other unknown id is ignored silently.
    if (this.binds.has(id)) this.unbind(id);
  }

  /** A Connect or Bind refused: StateClosed with the reason, and its edge error code (header 1014) when there is one. */
  private refuse(to: Message, connId: number, text: string, code?: number) {
    const m = message(ContentType.StateClosed, [[Header.ConnId, u32(connId)], [Header.Seq, u32(0)]], str(text));
    if (code !== undefined) m.headers.set(Header.ErrorCode, u32(code));
    this.channel.reply(to, m);
  }

  /**
   * An SDK whose hello carried an OIDC access token sends each refreshed one (upstream router
   * listener.go processTokenUpdate): accepted when it is valid and names the same API session; otherwise
   * refused and the channel closed, as upstream does. The API session's liveness is judged by the data
   * plane's sweep either way.
   */
  private async onUpdateToken(m: Message) {
    const token = m.body.toString('utf8');
    const s = looksLikeJwt(token) ? await apiSessionForEdge(this.fabric.ctx, token) : null;
    if (!s || s.id !== this.apiSession.id) {
      this.channel.reply(m, message(ContentType.UpdateTokenFailure, [], str(s ? 'invalid token, API session id does not match' : 'invalid token, could not be parsed or verified')));
      setTimeout(() => this.channel.close(), 100).unref();
      return;
    }
    this.channel.reply(m, message(ContentType.UpdateTokenSuccess, []));
  }

  /** The checks of section 6 for a Dial or Bind token presented on this channel. */
  private checkSession(token: string, type: 'Dial' | 'Bind'): Promise<EdgeSession> {
    return checkServiceSession(this.fabric.ctx, token, type, this.fingerprints, this.fabric.routerId, this.apiSession);
  }

  /** Section 4.2: Connect -> Dial to the host -> DialSuccess -> StateConnected to both. */
  private async onConnect(m: Message) {
    const connId = readUint(m.headers.get(Header.ConnId));
    if (connId === undefined) return; // upstream drops it silently
    if (this.sides.has(connId)) return this.refuse(m, connId, `conn id ${connId} is already in use on this channel`);
    const started = performance.now();
    const dialer = endpoint(this, connId, '');
    // Held from now, so a StateClosed during the checks finds (and ends) it.
    this.sides.set(connId, dialer);
    let circuit: Circuit | undefined;
    let s: EdgeSession | undefined;
    try {
      s = await this.checkSession(m.body.toString('utf8'), 'Dial');
      dialer.sessionId = s.id;
      if (s.encryptionRequired && !m.headers.has(Header.PublicKey)) throw new Refused('encryption required on service, initiator did not send public header', EdgeError.EncryptionDataMissing);
      const instance = m.headers.get(Header.TerminatorIdentity)?.toString('utf8') || undefined;
      const { hosted: t, served } = await this.fabric.pick(s.serviceId, instance);
      // None here: routed across links to another router's, when this router links (link/local-router.ts).
      let across: Awaited<ReturnType<NonNullable<Fabric['across']>>> | undefined;
      if (!t && !served) {
        if (!this.fabric.across) throw this.noTerminator(s, instance);
        across = await this.fabric.across(dialer, s, m.body.toString('utf8'), m, instance);
      }
      if (dialer.closed || this.closed) {
        if (across) closeSide(across.circuit.host, 'the dialer went away', true);
        return;
      }
      let hostKey = across ? across.hostKey : t?.hostKey;
      let egress: TransportEgress | undefined;
      if (across) {
        // The network records it (ctrl/network.ts), not this router's own count (circuits it ends itself).
        circuit = across.circuit;
      } else if (t) {
        t.dials++;
        circuit = { id: randomUUID(), serviceId: s.serviceId, terminatorId: t.id, clientId: s.identityId, hostId: t.hostId, dialer, host: endpoint(t.conn, 0, t.sessionId), createdAt: Date.now() };
        await t.conn.dialHost(t, circuit, m, s.identityName);
      } else {
        // A router-side terminator of this router: the router dials its address and is the far end.
        served!.dials++;
        egress = await TransportEgress.dial(this.fabric, served!, m, s.encryptionRequired, DIAL_TIMEOUT_MS);
        hostKey = egress.publicKey;
        circuit = { id: randomUUID(), serviceId: s.serviceId, terminatorId: served!.id, clientId: s.identityId, hostId: '', dialer, host: endpoint(egress, 0, ''), createdAt: Date.now() };
        connected(circuit.host);
      }
      if (dialer.closed || this.closed) {
        closeSide(circuit.host, 'the dialer went away', true);
        return;
      }
      link(circuit);
      if (!across) this.fabric.circuitStarted(circuit);
      const reply = message(ContentType.StateConnected, [[Header.ConnId, u32(connId)], [Header.Seq, u32(0)], [Header.CircuitId, str(circuit.id)]]);
      if (hostKey) reply.headers.set(Header.PublicKey, hostKey);
      this.channel.reply(m, reply);
      // Host data that raced ahead (its crypto header) goes after the StateConnected (4.3).
      connected(dialer);
      egress?.start(circuit.host);
      across?.start();
      this.fabric.dialSetup(performance.now() - started);
    } catch (e) {
      this.sides.delete(connId);
      dialer.closed = true;
      if (circuit && !circuit.host.closed) circuit.host.conn.forget(circuit.host);
      const f = failureOf(e);
      if (!this.closed) this.refuse(m, connId, f.reason, f.code);
      const who = s ?? f.who;
      this.fabric.dialFailed({
        reason: f.reason,
        code: f.code,
        cause: f.cause,
        serviceId: who?.serviceId,
        serviceName: who?.serviceName,
        identityId: who?.identityId ?? this.apiSession.identityId,
        identityName: who?.identityName ?? this.apiSession.identityName,
      });
    }
  }

  /**
   * Why a dial found no terminator here and there is no network to route it over (the control channel
   * is off): none anywhere (NO_TERMINATORS), or only on other routers (NO_PATH).
   */
  private noTerminator(s: EdgeSession, instance?: string): Refused {
    const of = instance ? ` for instance '${instance}'` : '';
    const other = this.fabric.elsewhere?.(s.serviceId) ?? { count: 0, routers: [] };
    if (other.count) {
      return new Refused(
        `service '${s.serviceName}' has no terminator${of} on this router; its ${other.count} terminator(s) are on router(s) ${other.routers.map((r) => `'${r}'`).join(', ')}, which this router (ztc's embedded router) cannot reach: with the control channel off (--no-ctrl) no router links with it. Dial through one of those routers, or host the service on this one too`,
        EdgeError.InvalidTerminator,
        'NO_PATH',
      );
    }
    return new Refused(`service '${s.serviceName}' has no terminators${of}: no host has bound it (on any router) and no router-side terminator names it`, EdgeError.InvalidTerminator, 'NO_TERMINATORS');
  }

  /**
   * Host side of a dial (4.1): both conn-id modes, as the Bind asked. The caller (1008) is the dialing
   * session's identity, set here: a dialer's own 1008 could name anyone (upstream passes it on
   * unchecked), and a Dial without one crashes the C SDK's host.
   */
  async dialHost(t: Terminator, circuit: Circuit, connect: Message, callerId: string) {
    const host = circuit.host;
    const dial = message(ContentType.Dial, [[Header.ConnId, u32(t.bindConnId)], [Header.Seq, u32(0)], [Header.CircuitId, str(circuit.id)], [Header.CallerId, str(callerId)]], str(t.token));
    for (const h of [Header.PublicKey, Header.ConnectionMarker, Header.AppData]) {
      const v = connect.headers.get(h);
      if (v) dial.headers.set(h, v);
    }
    if (t.assignIds) {
      // Registered before the Dial: a Go or C 1.x host sends its crypto header right after DialSuccess.
      host.connId = this.nextRouterId++;
      this.sides.set(host.connId, host);
      dial.headers.set(Header.RouterProvidedConnId, u32(host.connId));
    }
    let answer: Message;
    try {
      answer = await this.channel.request(dial, DIAL_TIMEOUT_MS);
    } catch (e) {
      this.forget(host);
      throw new Refused(`failed to establish connection with terminator address ${t.id}: ${(e as Error).message}`, EdgeError.InvalidTerminator, (e as Error).message.startsWith('no answer') ? 'ROUTER_ERR_DIAL_TIMED_OUT' : 'ROUTER_ERR_GENERIC');
    }
    if (answer.type !== ContentType.DialSuccess) {
      this.forget(host);
      const why = answer.type === ContentType.DialFailed ? answer.body.toString('utf8') || 'dial failed' : `unexpected answer type ${answer.type}`;
      throw new Refused(`failed to establish connection with terminator address ${t.id}: ${why}`, EdgeError.InvalidTerminator, answer.type === ContentType.DialFailed ? 'ROUTER_ERR_REJECTED_BY_APPLICATION' : 'ROUTER_ERR_GENERIC');
    }
    if (!t.assignIds) {
      // The C SDK 0.29 picks its own id and waits for StateConnected before it sends or accepts data.
      const id = readUint(answer.body.subarray(0, 4));
      if (id === undefined || this.sides.has(id)) {
        throw new Refused(`failed to establish connection with terminator address ${t.id}: the host answered an unusable conn id`, EdgeError.InvalidTerminator, 'ROUTER_ERR_GENERIC');
      }
      host.connId = id;
      this.sides.set(id, host);
      this.channel.reply(answer, message(ContentType.StateConnected, [[Header.ConnId, u32(t.bindConnId)], [Header.Seq, u32(0)]]));
    }
    connected(host);
  }

  /** Section 5.1: a terminator for the Bind's service on this router. */
  private async onBind(m: Message) {
    const connId = readUint(m.headers.get(Header.ConnId));
    if (connId === undefined) return;
    const token = m.body.toString('utf8');
    let s: EdgeSession;
    try {
      s = await this.checkSession(token, 'Bind');
    } catch (e) {
      if (!this.closed) this.refuse(m, connId, e instanceof Refused ? e.message : `failed to bind: ${(e as Error).message}`, e instanceof Refused ? e.code : EdgeError.Internal);
      return;
    }
    if (this.closed) return;
    const costHeader = m.headers.get(Header.Cost);
    // Go and C 1.x send 2 bytes, the C SDK 0.29 sends 4: the low 16 bits are the cost either way.
    const cost = costHeader && costHeader.length >= 2 ? costHeader.readUInt16LE(0) : costHeader?.length === 1 ? costHeader[0] : 0;
    const p = m.headers.get(Header.Precedence)?.[0];
    const precedence: Precedence = p === 1 ? 'required' : p === 2 ? 'failed' : 'default';
    const instanceId = m.headers.get(Header.TerminatorIdentity)?.toString('utf8') ?? '';
    const listenerId = m.headers.get(Header.ListenerId)?.toString('utf8') || undefined;
    const fabric = this.fabric;

    let id: string = randomUUID();
    // 5.2: a Bind again on the same binding is a duplicate; a listener id seen elsewhere is taken over.
    if (listenerId) {
      for (const old of fabric.terminators.all().filter((t) => t.listenerId === listenerId && t.serviceId === s.serviceId)) {
        if (old.conn === this && old.bindConnId === connId && old.token === token) {
          this.bindAccepted(m, connId, old);
          return;
        }
        id = old.id;
        await fabric.removeTerminator(old, 'found a newer terminator for listener id');
      }
    } else {
      for (const old of fabric.terminators.all().filter((t) => t.token === token && t.instanceId === instanceId && t.serviceId === s.serviceId)) {
        await fabric.removeTerminator(old, 'duplicate terminator');
      }
    }
    const t: Terminator = {
      id,
      serviceId: s.serviceId,
      serviceName: s.serviceName,
      hostId: s.identityId,
      instanceId,
      cost,
      precedence,
      conn: this,
      bindConnId: connId,
      token,
      sessionId: s.id,
      apiSessionId: s.apiSessionId,
      hostKey: m.headers.get(Header.PublicKey),
      assignIds: readBool(m.headers.get(Header.RouterProvidedConnId)),
      listenerId,
      dials: 0,
    };
    try {
      await fabric.addTerminator(t);
    } catch (e) {
      if (!this.closed) this.refuse(m, connId, `failed to bind: ${(e as Error).message}`);
      return;
    }
    if (this.closed) {
      await fabric.removeTerminator(t);
      return;
    }
    this.binds.add(connId);
    this.bindAccepted(m, connId, t);
    if (readBool(m.headers.get(Header.SupportsBindSuccess))) this.channel.send(message(ContentType.BindSuccess, [[Header.ConnId, u32(connId)]]));
  }

  private bindAccepted(m: Message, connId: number, t: Terminator) {
    const reply = message(ContentType.StateConnected, [[Header.ConnId, u32(connId)], [Header.Seq, u32(0)]]);
    if (t.assignIds) reply.headers.set(Header.RouterProvidedConnId, bool(true));
    this.channel.reply(m, reply);
  }

  /** Unbind (Go, C 1.x) or StateClosed on a bind id (C 0.29): the binding's terminators go. No reply, as upstream. */
  private unbind(connId: number | undefined, token?: string) {
    if (connId === undefined) return;
    const ts = this.fabric.terminators.ofBinding(this, connId, token || undefined);
    if (!token || ts.length === this.fabric.terminators.ofBinding(this, connId).length) this.binds.delete(connId);
    for (const t of ts) void this.fabric.removeTerminator(t);
  }

  private onUpdateBind(m: Message) {
    const connId = readUint(m.headers.get(Header.ConnId));
    if (connId === undefined) return;
    const cost = m.headers.get(Header.Cost);
    const p = m.headers.get(Header.Precedence);
    for (const t of this.fabric.terminators.ofBinding(this, connId, m.body.toString('utf8'))) {
      if (cost && cost.length >= 2) t.cost = cost.readUInt16LE(0);
      if (p && p.length) t.precedence = p[0] === 1 ? 'required' : p[0] === 2 ? 'failed' : 'default';
      void this.fabric.terminatorChanged(t);
    }
  }

  /** Answered here: this router is the only hop (3.4). */
  private onTraceRoute(m: Message) {
    const reply = message(ContentType.TraceRouteResponse, [[Header.TraceHopType, str('xgress/edge')], [Header.TraceHopId, str(this.fabric.routerId)]]);
    for (const h of [Header.ConnId, Header.TraceHopCount, 1015]) {
      const v = m.headers.get(h);
      if (v) reply.headers.set(h, v);
    }
    this.channel.reply(m, reply);
  }

  /** End one service session's part of this channel: its dials and hosted sides, and its terminators. */
  endSession(sessionId: string, reason: string) {
    for (const side of this.sidesOfSession(sessionId)) closeSide(side, reason, true);
  }

  /** The channel ended: every side's peer is told, every terminator of this channel goes (5.5). */
  closeAll() {
    if (this.closed) return;
    this.closed = true;
    for (const side of [...this.sides.values()]) closeSide(side, 'the edge connection closed', false);
    this.sides.clear();
    for (const t of this.fabric.terminators.ofConn(this)) void this.fabric.removeTerminator(t, undefined);
  }
}
