// ztc's embedded router as a router of the mesh: to the network of routers (ctrl/network.ts) it is one more
// router circuits are routed over, told its part of a path the way upstream routers are told by a Route
// (forwarding, and at the egress the terminator to dial), but in-process. Its links (link/accept.ts) carry
// the circuits; its SDKs' dials that find no terminator here are routed across them.
import { randomUUID } from 'node:crypto';
import { message, str, u32, type Message } from '../channel/codec.js';
import { ContentType, Header } from '../channel/messages.js';
import { connected, endpoint, link, type Circuit, type Endpoint } from '../circuits.js';
import { CtrlHeader, CtrlType } from '../ctrl/messages.js';
import type { CircuitRequest, RouterNetwork, UpstreamTerminator } from '../ctrl/network.js';
import type { RouteStep } from '../ctrl/paths.js';
import type { EdgeSession } from '../../model/data-plane.js';
import type { Fabric } from '../fabric.js';
import { failureOf } from '../dial-failures.js';
import { Forwarder } from './forwarder.js';
import type { Link } from './link.js';
import { XgressSide, type SideHost } from './xgress-side.js';

/** RouteResult error code (header 1104) upstream's egress gives for a terminator it does not hold. */
const INVALID_TERMINATOR = 1;
/** Peer data a dialer's Connect carries to the host (public key, app data, connection marker). */
const PEER_DATA = [Header.PublicKey, Header.AppData, Header.ConnectionMarker];

export class LocalRouter implements SideHost {
  readonly forwarder: Forwarder;
  /** The network it is a router of (set when the control channel runs beside it). */
  network?: RouterNetwork;
  /** Dials links to routers that do not dial theirs here (link/dial.ts; with the network). */
  dialer?: { linkClosed(peerId: string): void };
  readonly closed = false;

  constructor(readonly fabric: Fabric) {
    this.forwarder = new Forwarder(fabric.log, (l) => this.linkClosed(l));
  }

  get routerId() {
    return this.fabric.routerId;
  }

  get name() {
    return this.fabric.name || this.fabric.routerId;
  }

  // ---- as a router of the network (ctrl/network.ts PathMember)

  /** Its part of a circuit's path: forwarding, and at the egress the Dial to the hosting SDK. */
  async route(circuitId: string, attempt: number, step: RouteStep, tags: Record<string, string>): Promise<Message | undefined> {
    const result = (headers: [number, Buffer][]) => message(CtrlType.RouteResult, [[CtrlHeader.RouteAttempt, u32(attempt)], ...headers], str(circuitId));
    for (const f of step.forwards) {
      // A Link destination must be a link this router holds (upstream's rule), else the route fails.
      if (f.dstType === 2 && !this.forwarder.links.has(f.dstAddress)) return result([[CtrlHeader.RouteError, str(`no link ${f.dstAddress} on router '${this.name}'`)]]);
    }
    this.forwarder.route(circuitId, step.forwards);
    const egress = step.egress;
    if (!egress) return result([[CtrlHeader.RouteSuccess, Buffer.from([1])]]);
    const t = this.fabric.terminators.get(egress.destination.replace(/^hosted:/, ''));
    if (!t || t.conn.closed) {
      this.forwarder.unroute(circuitId);
      return result([[CtrlHeader.RouteError, str(`router '${this.name}' holds no terminator ${egress.destination}`)], [CtrlHeader.RouteErrorCode, Buffer.from([INVALID_TERMINATOR])]]);
    }
    const side = new XgressSide(this, circuitId, egress.address, 'terminator');
    const far = endpoint(side, 0, '');
    side.endpoint = far;
    const circuit: Circuit = { id: circuitId, serviceId: t.serviceId, terminatorId: t.id, clientId: tags.clientId ?? '', hostId: t.hostId, dialer: far, host: endpoint(t.conn, 0, t.sessionId), createdAt: Date.now() };
    const connect = message(ContentType.Connect, PEER_DATA.filter((h) => egress.peerData.has(h)).map((h) => [h, egress.peerData.get(h)!]));
    this.forwarder.attach(side);
    t.dials++;
    try {
      await t.conn.dialHost(t, circuit, connect, egress.peerData.get(Header.CallerId)?.toString('utf8') ?? '');
    } catch (e) {
      this.forwarder.detach(side);
      this.forwarder.unroute(circuitId);
      return result([[CtrlHeader.RouteError, str(failureOf(e).reason)]]);
    }
    link(circuit);
    // The host's data waits (circuits.ts early data) until the dialing end's CircuitStart: before it the
    // routers toward the dialer may not have their forwarding yet.
    return result([[CtrlHeader.RouteSuccess, Buffer.from([1])], ...(t.hostKey ? ([[Header.PublicKey, t.hostKey]] as [number, Buffer][]) : [])]);
  }

  unroute(circuitId: string) {
    for (const side of this.forwarder.unroute(circuitId)) {
      this.forwarder.detach(side);
      side.abort('circuit ended');
    }
  }

  /** Its SDKs' terminators, as the network ranks every router's (the host's key is their peer data). */
  terminators(serviceId: string): UpstreamTerminator[] {
    return [...this.fabric.terminators.ofService(serviceId)]
      .filter((t) => !t.conn.closed)
      .map((t) => ({ id: t.id, address: t.id, routerId: this.routerId, serviceId: t.serviceId, hostId: t.hostId, instanceId: t.instanceId, cost: t.cost, precedence: t.precedence, sessionId: t.sessionId, apiSessionId: t.apiSessionId, token: t.token, peerData: new Map(t.hostKey ? [[Header.PublicKey, t.hostKey]] : []), dials: t.dials }));
  }

  // ---- its SDKs' dials across links

  /**
   * A dial on this router for a service with no terminator here: the network routes it from this router
   * to the best terminator it can reach over links. Returns the circuit (the far end a side of it) and the
   * host's key for the dialer; `start` sends CircuitStart once the dialer has its StateConnected.
   */
  async dialAcross(dialer: Endpoint, s: EdgeSession, token: string, connect: Message, instanceId?: string): Promise<{ circuit: Circuit; hostKey?: Buffer; start(): void }> {
    if (!this.network) throw new Error('no network of routers');
    const peerData = new Map<number, Buffer>();
    for (const h of PEER_DATA) {
      const v = connect.headers.get(h);
      if (v) peerData.set(h, v);
    }
    // The caller the host is told is the session's identity (never what the dialer claims).
    peerData.set(Header.CallerId, Buffer.from(s.identityName, 'utf8'));
    const r: CircuitRequest = { serviceId: s.serviceId, serviceName: s.serviceName, clientId: s.identityId, clientName: s.identityName, sessionId: s.id, apiSessionId: s.apiSessionId, token, instanceId, encryptionRequired: s.encryptionRequired, peerData };
    const routed = await this.network.createCircuit(this, r);
    const c = routed.circuit;
    const side = new XgressSide(this, c.id, c.ingressId, 'initiator');
    const far = endpoint(side, 0, s.id);
    side.endpoint = far;
    this.forwarder.attach(side);
    const circuit: Circuit = { id: c.id, serviceId: s.serviceId, terminatorId: c.terminator.id, clientId: s.identityId, hostId: routed.tags.hostId ?? '', dialer, host: far, createdAt: Date.now() };
    return {
      circuit,
      hostKey: routed.peerData.get(Header.PublicKey),
      start: () => {
        side.start();
        connected(far);
      },
    };
  }

  // ---- SideHost

  out(side: XgressSide, m: Message, ack: boolean) {
    this.forwarder.fromSide(side, m, ack);
  }

  linkOf(side: XgressSide): Link | undefined {
    return this.forwarder.linkOf(side);
  }

  /** An end here closed: the circuit is over (as a router's Fault tells upstream's controller). */
  sideClosed(side: XgressSide) {
    this.forwarder.detach(side);
    const c = this.network?.circuits.get(side.circuitId);
    // Unrouted after what was sent has gone (not `now`): the far end gets its CircuitEnd first.
    if (c) this.network!.endCircuit(c, false);
  }

  // ---- links

  linkUp(l: Link) {
    this.forwarder.addLink(l);
    this.fabric.log.info({ link: l.id, router: l.peerId, dialed: l.dialed }, 'link: up');
  }

  private linkClosed(l: Link) {
    this.fabric.log.info({ link: l.id, router: l.peerId }, 'link: closed');
    this.dialer?.linkClosed(l.peerId);
    // Circuits over it move to another path, or end (the network decides: it may already know).
    void this.network?.linkGone(l.id).catch(() => {});
  }

  /** A fresh link id, for links this router dials. */
  static newLinkId() {
    return randomUUID();
  }
}
