// A router-side terminator served by the embedded router (static-terminators.ts): the router dials the
// terminator's address over TCP and is itself the far end of the dialer's circuit, as upstream's
// xgress_edge_transport and xgress_transport dialers are. With binding edge_transport and a dialer that
// sent its public key, the router ends the end-to-end encryption (SetupServerCrypto: its own key pair,
// crypto_kx server keys, a secretstream each way, its header the first data the dialer gets); binding
// transport carries bytes as they are. Half closes pass both ways (a FIN from the dialer ends the
// socket's writing, the socket's end is a FIN to the dialer); the socket's close ends the circuit.
import net from 'node:net';
import { Backpressure, type Flow } from '../channel/backpressure.js';
import { HIGH_WATER } from '../channel/channel.js';
import { message, readUint, u32, type Message } from '../channel/codec.js';
import { ContentType, EdgeError, FLAG_FIN, Header } from '../channel/messages.js';
import { closeSide, relay, type Endpoint, type SideConn } from '../circuits.js';
import type { Fabric } from '../fabric.js';
import { Refused } from '../session-checks.js';
import type { StaticTerminator } from '../static-terminators.js';
import { Decryptor, Encryptor, HEADER_BYTES, kxKeyPair, serverSessionKeys } from './secretstream.js';

/** The bindings the embedded router serves itself (upstream's names). */
export const SERVED_BINDINGS = new Set(['edge_transport', 'transport']);

/** host and port of a `tcp:HOST:PORT` address (IPv6 in brackets), or why it is not one. */
export function tcpAddress(address: string): { host: string; port: number } | string {
  const m = /^tcp:(.+):(\d{1,5})$/.exec(address);
  if (!m) return `the embedded router dials tcp:HOST:PORT addresses, not '${address}'`;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return `'${address}' has no valid port`;
  return { host: m[1].replace(/^\[(.*)\]$/, '$1'), port };
}

export class TransportEgress implements SideConn, Flow {
  readonly channel = this;
  closed = false;
  private side?: Endpoint;
  private readonly flow = new Backpressure(this);
  private encryptor?: Encryptor;
  private decryptor?: Decryptor;
  /** Our receiving key until the dialer's stream header comes (its first data). */
  private rxKey?: Buffer;
  /** The router's public key for the dialer (StateConnected header 1003), when it encrypts. */
  readonly publicKey?: Buffer;

  private constructor(
    readonly fabric: Fabric,
    private readonly socket: net.Socket,
    peerKey: Buffer | undefined,
  ) {
    if (peerKey) {
      const pair = kxKeyPair();
      const keys = serverSessionKeys(pair, peerKey);
      this.encryptor = new Encryptor(keys.tx);
      this.rxKey = keys.rx;
      this.publicKey = pair.publicKey;
    }
  }

  /**
   * Dial `t`'s address for the Connect `connect` (within `timeoutMs`). Refused, as upstream's routers
   * refuse, when the address is not one it dials, the connection fails, or the service wants
   * encryption the binding cannot give.
   */
  static async dial(fabric: Fabric, t: StaticTerminator, connect: Message, encryptionRequired: boolean, timeoutMs: number): Promise<TransportEgress> {
    const target = tcpAddress(t.address);
    if (typeof target === 'string') throw new Refused(`failed to establish connection with terminator ${t.id}: ${target}`, EdgeError.InvalidTerminator, 'ROUTER_ERR_MISCONFIGURED_TERMINATOR');
    const peerKey = t.binding === 'edge_transport' ? connect.headers.get(Header.PublicKey) : undefined;
    if (encryptionRequired && !peerKey) throw new Refused('encryption required on service, terminator did not send public header', EdgeError.EncryptionDataMissing);
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect({ host: target.host, port: target.port, allowHalfOpen: true });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error(`no connection within ${timeoutMs} ms`));
      }, timeoutMs);
      s.once('connect', () => (clearTimeout(timer), s.removeAllListeners('error'), resolve(s)));
      s.once('error', (e) => (clearTimeout(timer), reject(e)));
    }).catch((e: NodeJS.ErrnoException) => {
      const cause = e.code === 'ECONNREFUSED' ? 'ROUTER_ERR_CONN_REFUSED' : e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN' ? 'ROUTER_ERR_DNS_RESOLUTION_FAILED' : e.message.startsWith('no connection within') ? 'ROUTER_ERR_DIAL_TIMED_OUT' : 'ROUTER_ERR_GENERIC';
      throw new Refused(`failed to establish connection with terminator ${t.id} at ${t.address}: ${e.message}`, EdgeError.InvalidTerminator, cause);
    });
    // Nothing is read until the circuit stands (start).
    socket.pause();
    socket.setNoDelay(true);
    try {
      return new TransportEgress(fabric, socket, peerKey);
    } catch (e) {
      socket.destroy();
      throw new Refused(`failed to establish end-to-end encryption with the dialer: ${(e as Error).message}`, EdgeError.EncryptionDataMissing);
    }
  }

  /** The circuit stands (its StateConnected went to the dialer): our stream header, then the socket's bytes. */
  start(side: Endpoint) {
    this.side = side;
    const socket = this.socket;
    socket.on('data', (chunk: Buffer) => {
      this.fabric.bytesIn += chunk.length;
      relay(side, message(ContentType.Data, [], this.encryptor ? this.encryptor.push(chunk) : chunk));
    });
    socket.on('end', () => relay(side, message(ContentType.Data, [[Header.Flags, u32(FLAG_FIN)]])));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.ended('the terminator\'s connection closed'));
    socket.on('drain', () => this.flow.releaseAll());
    if (this.encryptor) relay(side, message(ContentType.Data, [], this.encryptor.header));
    if (!this.flow.paused) socket.resume();
  }

  /** What the circuit sends this side: the dialer's data (decrypted), its FIN, its end. */
  send(m: Message): number {
    if (this.closed) return -1;
    if (m.type === ContentType.StateClosed) {
      this.ended();
      return 0;
    }
    if (m.type !== ContentType.Data) return 0;
    let body = m.body;
    try {
      if (this.rxKey && body.length) {
        if (body.length !== HEADER_BYTES) throw new Error(`the first data was ${body.length} bytes, not a ${HEADER_BYTES}-byte stream header`);
        this.decryptor = new Decryptor(this.rxKey, body);
        this.rxKey = undefined;
        body = Buffer.alloc(0);
      } else if (this.decryptor && body.length) body = this.decryptor.pull(body).message;
    } catch (e) {
      if (this.side) closeSide(this.side, `end-to-end encryption failed: ${(e as Error).message}`, true);
      return 0;
    }
    if (body.length) this.socket.write(body);
    if (((readUint(m.headers.get(Header.Flags)) ?? 0) & FLAG_FIN) !== 0) this.socket.end();
    return 0;
  }

  forget(_ep: Endpoint) {}

  get full(): boolean {
    return this.socket.writableLength > HIGH_WATER;
  }

  pauseFor(dest: Flow) {
    if (this.flow.waitFor(dest)) this.socket.pause();
  }

  hold(source: Flow) {
    this.flow.hold(source);
  }

  released(by: Flow) {
    if (this.flow.freedBy(by) && !this.closed && this.side) this.socket.resume();
  }

  /** The socket is done (or the dialer ended the circuit): the circuit ends with it. */
  private ended(reason?: string) {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.flow.releaseAll();
    if (reason && this.side) closeSide(this.side, reason, false);
  }
}
