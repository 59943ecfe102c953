// Links ztc's router dials (ctrl-channel-1.1.md 2.7): to a router that announced a link listener and has
// not dialed its own link here within a few seconds (upstream's default router dials first, and a router
// with a listener but no dialer never does). Dialed as upstream's dialer does: TLS with the router's
// certificate and ALPN ziti-link, two channels (payloads, acks) joined by one connection id, each with
// the link hello; the listening router asks the controller whether ztc's router is who it says
// (VerifyRouter, answered from the store). The link is then the network's as any reported one.
import { randomUUID } from 'node:crypto';
import tls from 'node:tls';
import { Channel } from '../channel/channel.js';
import { FRAME_LIMITS, message, readBool, u32, type Message } from '../channel/codec.js';
import { ContentType, Header } from '../channel/messages.js';
import { LinkHeader } from './accept.js';
import { Link } from './link.js';
import type { LocalRouter } from './local-router.js';

/** How long a router that announced a listener has to dial its own link here before ztc's router dials. */
export const DIAL_AFTER_MS = 3000;
/** Between attempts while the router stays up and no link joins it. */
const REDIAL_MS = 10_000;
const HELLO_TIMEOUT_MS = 10_000;

export interface Peer {
  id: string;
  name: string;
  version: string;
  listeners: { address?: string; protocol?: string; groups?: string[] }[];
}

export interface DialCredentials {
  certPem: string;
  keyPem: string;
  caPem: string;
}

export class LinkDialer {
  private peers = new Map<string, { peer: Peer; timer?: NodeJS.Timeout; dialing: boolean }>();
  private stopped = false;

  constructor(
    private readonly router: LocalRouter,
    /** The router's certificate (renewed ones included) and the CAs a peer's server certificate must chain to. */
    private readonly credentials: () => DialCredentials,
  ) {}

  /** A router came up (with its listeners), or went (`up` false). */
  peer(p: Peer, up: boolean) {
    const known = this.peers.get(p.id);
    if (known?.timer) clearTimeout(known.timer);
    if (!up) return void this.peers.delete(p.id);
    const state = { peer: p, dialing: false, timer: undefined as NodeJS.Timeout | undefined };
    this.peers.set(p.id, state);
    this.schedule(p.id, DIAL_AFTER_MS);
  }

  /** A link with `peerId` closed: dial again later if the router is still up and nothing else joins it. */
  linkClosed(peerId: string) {
    if (this.peers.has(peerId)) this.schedule(peerId, REDIAL_MS);
  }

  private schedule(id: string, ms: number) {
    const s = this.peers.get(id);
    if (!s || this.stopped) return;
    if (s.timer) clearTimeout(s.timer);
    s.timer = setTimeout(() => void this.maybeDial(id), ms);
    s.timer.unref();
  }

  private async maybeDial(id: string) {
    const s = this.peers.get(id);
    if (!s || s.dialing || this.stopped) return;
    s.timer = undefined;
    if ([...this.router.forwarder.links.values()].some((l) => l.peerId === id && !l.closed)) return;
    const listener = s.peer.listeners.find((l) => /^tls:/.test(l.address ?? '') && (!l.groups?.length || l.groups.includes('default')));
    if (!listener) return;
    s.dialing = true;
    try {
      await this.dial(s.peer, listener.address!);
    } catch (e) {
      this.router.fabric.log.info({ router: s.peer.name, address: listener.address, err: (e as Error).message }, 'link: dialing failed, trying again later');
      this.schedule(id, REDIAL_MS);
    } finally {
      s.dialing = false;
    }
  }

  private async dial(peer: Peer, address: string) {
    const m = /^tls:(.+):(\d+)$/.exec(address);
    if (!m) throw new Error(`not a tls:HOST:PORT address: ${address}`);
    const [, host, port] = m;
    const linkId = randomUUID().replace(/-/g, '').slice(0, 22);
    const connId = randomUUID();
    const payload = await this.channel(host, Number(port), linkId, connId, 1, peer);
    let ack: Channel;
    try {
      ack = await this.channel(host, Number(port), linkId, connId, 2, peer);
    } catch (e) {
      payload.close();
      throw e;
    }
    // A link from the router that arrived meanwhile is the one kept.
    if ([...this.router.forwarder.links.values()].some((l) => l.peerId === peer.id && !l.closed)) {
      payload.close();
      ack.close();
      return;
    }
    const link = new Link(linkId, peer.id, payload, ack, true, 1, this.router.forwarder);
    this.router.linkUp(link);
    await this.router.network?.linkReported({ id: linkId, src: this.router.routerId, dst: peer.id, protocol: 'tls', dialAddress: address, iteration: 1, staticCost: 1, srcLatencyNs: 0, dstLatencyNs: 0, cost: 1 });
  }

  /** One channel of the link: TLS, the hello, its Result. */
  private channel(host: string, port: number, linkId: string, connId: string, type: number, peer: Peer): Promise<Channel> {
    const c = this.credentials();
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host, port, servername: /^[\d.]+$|:/.test(host) ? undefined : host, cert: c.certPem, key: c.keyPem, ca: c.caPem, ALPNProtocols: ['ziti-link'], minVersion: 'TLSv1.2' });
      socket.setNoDelay(true);
      const timer = setTimeout(() => fail(new Error(`no answer to the link hello within ${HELLO_TIMEOUT_MS / 1000} s`)), HELLO_TIMEOUT_MS);
      const fail = (e: Error) => {
        clearTimeout(timer);
        socket.destroy();
        reject(e);
      };
      socket.once('error', fail);
      socket.once('secureConnect', () => {
        const ch = new Channel(socket, FRAME_LIMITS);
        ch.attach({
          message: (r: Message) => {
            if (r.type !== ContentType.Result) return;
            clearTimeout(timer);
            socket.off('error', fail);
            if (!readBool(r.headers.get(Header.ResultSuccess))) return fail(new Error(`router '${peer.name}' refused the link: ${r.body.toString('utf8') || 'no reason given'}`));
            resolve(ch);
          },
          closed: (e) => fail(e ?? new Error(`router '${peer.name}' closed the link channel during its hello`)),
        });
        const hello = message(ContentType.Hello, [
          [LinkHeader.ConnId, Buffer.from(connId)],
          [LinkHeader.Type, Buffer.from([type])],
          [LinkHeader.RouterId, Buffer.from(this.router.routerId)],
          [LinkHeader.RouterVersion, Buffer.from(peer.version || 'v0.0.0')],
          [LinkHeader.Binding, Buffer.from('transport')],
          [LinkHeader.Iteration, u32(1)],
        ], Buffer.from(linkId), -1);
        ch.send(hello);
      });
    });
  }

  stop() {
    this.stopped = true;
    for (const s of this.peers.values()) if (s.timer) clearTimeout(s.timer);
    this.peers.clear();
  }
}
