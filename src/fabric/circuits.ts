// Circuits on one router: a dialer's virtual connection joined to a host's, and the relay between them.
// The router never decrypts: Data bodies (end-to-end encrypted by the SDKs) pass as they are, with the
// Flags (1010) and trace (128) headers copied byte for byte and each side's own conn id and counter.
import type { Flow } from './channel/backpressure.js';
import { message, u32, type Message } from './channel/codec.js';
import { ContentType, Header } from './channel/messages.js';

/** Data a side may receive before it is connected (a host's crypto header racing the dialer's StateConnected). */
export const EARLY_DATA_CAP = 512 * 1024;

/**
 * What a side of a circuit lives on: an SDK's edge channel (edge/sdk-connection.ts), or a connection
 * the router dialed for a terminator it serves itself (edge/transport-egress.ts). Messages to the side
 * go to `channel`, which also takes part in backpressure.
 */
export interface SideConn {
  readonly channel: Flow & { send(m: Message): number };
  /** Who keeps the router's circuits: told when one ends (fabric.ts). */
  readonly fabric: { circuitEnded(c: Circuit): void };
  forget(ep: Endpoint): void;
}

export interface Endpoint {
  conn: SideConn;
  connId: number;
  /** Our edge sequence counter for messages to this side. */
  seq: number;
  peer?: Endpoint;
  circuit?: Circuit;
  /** Data may be sent to this side (its StateConnected went out). */
  connected: boolean;
  early: Message[];
  earlyBytes: number;
  closed: boolean;
  /** The service session that opened this side: when it ends, so does the side. */
  sessionId: string;
  /** Data bytes this side sent into the circuit. */
  rx: number;
}

export interface Circuit {
  id: string;
  serviceId: string;
  terminatorId: string;
  /** The dialing identity, and the hosting one ('' for a terminator the router serves itself). */
  clientId: string;
  hostId: string;
  dialer: Endpoint;
  host: Endpoint;
  createdAt: number;
}

export function endpoint(conn: SideConn, connId: number, sessionId: string): Endpoint {
  return { conn, connId, seq: 0, connected: false, early: [], earlyBytes: 0, closed: false, sessionId, rx: 0 };
}

export function link(circuit: Circuit) {
  circuit.dialer.peer = circuit.host;
  circuit.host.peer = circuit.dialer;
  circuit.dialer.circuit = circuit;
  circuit.host.circuit = circuit;
}

/** Data from one side to its peer; buffered (bounded) while the peer is not connected yet. */
export function relay(from: Endpoint, m: Message) {
  from.rx += m.body.length;
  const to = from.peer;
  if (!to || to.closed) return;
  const out = message(ContentType.Data, [], m.body);
  const flags = m.headers.get(Header.Flags);
  const uuid = m.headers.get(Header.UUID);
  if (!to.connected) {
    to.earlyBytes += m.body.length;
    if (to.earlyBytes > EARLY_DATA_CAP) {
      closeSide(from, 'the peer is not connected and its buffer is full', true);
      return;
    }
    // Headers are set at delivery, with the counter of that moment.
    if (flags) out.headers.set(Header.Flags, flags);
    if (uuid) out.headers.set(Header.UUID, uuid);
    to.early.push(out);
    return;
  }
  send(to, out, flags, uuid);
  // Backpressure: the peer's socket is full, so stop reading the socket that feeds it.
  if (to.conn.channel.full) from.conn.channel.pauseFor(to.conn.channel);
}

function send(to: Endpoint, out: Message, flags?: Buffer, uuid?: Buffer) {
  out.headers.set(Header.ConnId, u32(to.connId));
  out.headers.set(Header.Seq, u32(++to.seq));
  if (flags) out.headers.set(Header.Flags, flags);
  if (uuid) out.headers.set(Header.UUID, uuid);
  to.conn.channel.send(out);
}

/** Mark a side connected and deliver what waited for it. */
export function connected(ep: Endpoint) {
  ep.connected = true;
  const early = ep.early;
  ep.early = [];
  ep.earlyBytes = 0;
  for (const m of early) send(ep, m);
}

/**
 * End one side: forget it on its channel and tell the peer (never with an empty body: the C SDKs read
 * an empty StateClosed as "Invalid Session"). `notifySelf` also tells this side (the router ended it).
 */
export function closeSide(ep: Endpoint, reason: string, notifySelf: boolean) {
  if (ep.closed) return;
  ep.closed = true;
  ep.conn.forget(ep);
  if (notifySelf) stateClosed(ep, reason);
  const peer = ep.peer;
  if (peer && !peer.closed) {
    peer.closed = true;
    peer.conn.forget(peer);
    stateClosed(peer, notifySelf ? reason : 'closed by peer');
  }
  if (ep.circuit) ep.conn.fabric.circuitEnded(ep.circuit);
}

function stateClosed(ep: Endpoint, reason: string) {
  ep.conn.channel.send(message(ContentType.StateClosed, [[Header.ConnId, u32(ep.connId)], [Header.Seq, u32(++ep.seq)]], Buffer.from(reason || 'closed')));
}
