// Links other routers dial to ztc's router (ctrl-channel-1.1.md 2.7), on the edge port: upstream's link
// dialers ask for ALPN "ziti-link", SDKs for "ziti-edge" or nothing. The hello names the link (its body),
// the dialing router (header 2), its version (3), the link's iteration (5) and, for a split link, which
// of its two channels this is (1: payloads, 2: acks) and the id joining them (0). The dialer must be the
// router it names: its certificate's leaf is the one enrolled for it (as upstream's VerifyRouter checks).
import type { Channel } from '../channel/channel.js';
import { FRAME_LIMITS, i32, message, str, bool, type Message } from '../channel/codec.js';
import { peerFingerprints, type Hello } from '../channel/listener.js';
import { ContentType, Header } from '../channel/messages.js';
import { routerFingerprint } from '../../model/fabric-state.js';
import { Link } from './link.js';
import type { LocalRouter } from './local-router.js';

export const LinkHeader = { ConnId: 0, Type: 1, RouterId: 2, RouterVersion: 3, Binding: 4, Iteration: 5 } as const;
const PAYLOAD_CHANNEL = 1;
const ACK_CHANNEL = 2;
/** How long the first channel of a split link waits for its second. */
const PAIR_TIMEOUT_MS = 10_000;

interface Half {
  channel: Channel;
  early: Message[];
}

interface Pending {
  linkId: string;
  routerId: string;
  iteration: number;
  payload?: Half;
  ack?: Half;
  timer: NodeJS.Timeout;
}

export class LinkAcceptor {
  private pending = new Map<string, Pending>();

  constructor(private readonly router: LocalRouter) {}

  private get log() {
    return this.router.fabric.log;
  }

  async accept({ channel, hello, socket, accepted }: Hello) {
    const h = hello.headers;
    const linkId = hello.body.toString('utf8');
    const routerId = h.get(LinkHeader.RouterId)?.toString('utf8') ?? '';
    const type = h.get(LinkHeader.Type)?.[0] ?? 0;
    const connId = h.get(LinkHeader.ConnId)?.toString('utf8') ?? '';
    const iteration = h.get(LinkHeader.Iteration)?.readUInt32LE(0) ?? 0;
    // Messages that arrive before the link is whole (its second channel) wait for it.
    const half: Half = { channel, early: [] };
    channel.attach({ message: (m) => half.early.push(m), closed: () => {} });
    const refuse = (why: string) => {
      this.log.info({ link: linkId, router: routerId, reason: why }, 'link: refused');
      channel.send(reply(hello, false, why, this.router.routerId));
      setTimeout(() => channel.close(), 100).unref();
    };
    if (!linkId || !routerId) return refuse('a link hello must name the link (its body) and the dialing router (header 2)');
    if (type !== 0 && !connId) return refuse('a split link channel must carry its connection id (header 0)');
    if (type !== 0 && type !== PAYLOAD_CHANNEL && type !== ACK_CHANNEL) return refuse(`unknown link channel type ${type}`);
    let known: string | null;
    try {
      known = await routerFingerprint(this.router.fabric.ctx, routerId);
    } catch (e) {
      return refuse(`could not verify the router: ${(e as Error).message}`);
    }
    // The leaf only: a chain that merely includes the router's certificate proves nothing (GHSA-hhm9-wf63-g7qj).
    const leaf = peerFingerprints(socket)[0];
    if (!known) return refuse(`no enrolled router ${routerId}`);
    if (leaf !== known) return refuse(`router ${routerId} presented a certificate that is not its enrolled one`);
    if (channel.closed) return;
    accepted();
    channel.setLimits(FRAME_LIMITS);
    channel.send(reply(hello, true, '', this.router.routerId));
    if (type === 0) return this.up(linkId, routerId, iteration, half);
    const key = `${routerId}/${connId}`;
    let p = this.pending.get(key);
    if (!p) {
      p = { linkId, routerId, iteration, timer: setTimeout(() => this.drop(key, 'its second channel did not arrive'), PAIR_TIMEOUT_MS) };
      p.timer.unref();
      this.pending.set(key, p);
    }
    if ((type === PAYLOAD_CHANNEL ? p.payload : p.ack) || p.linkId !== linkId) {
      channel.close(new Error('a second channel of the same kind for one link'));
      return;
    }
    if (type === PAYLOAD_CHANNEL) p.payload = half;
    else p.ack = half;
    channel.socket.once('close', () => this.drop(key, 'a channel closed before the link was whole'));
    if (p.payload && p.ack) {
      clearTimeout(p.timer);
      this.pending.delete(key);
      this.up(linkId, routerId, iteration, p.payload, p.ack);
    }
  }

  private drop(key: string, why: string) {
    const p = this.pending.get(key);
    if (!p) return;
    this.pending.delete(key);
    clearTimeout(p.timer);
    this.log.info({ link: p.linkId, router: p.routerId, reason: why }, 'link: dropped a half-made link');
    p.payload?.channel.close();
    p.ack?.channel.close();
  }

  private up(linkId: string, routerId: string, iteration: number, payload: Half, ack?: Half) {
    const l = new Link(linkId, routerId, payload.channel, ack?.channel, false, iteration, this.router.forwarder);
    this.router.linkUp(l);
    for (const half of ack ? [payload, ack] : [payload]) for (const m of half.early) l.deliver(half.channel, m);
  }

  close() {
    for (const key of [...this.pending.keys()]) this.drop(key, 'the router is stopping');
  }
}

/** The hello's answer, as upstream's channel listener gives it: a Result replying to sequence -1, our id in header 8. */
function reply(hello: Message, ok: boolean, text: string, routerId: string): Message {
  const m = message(ContentType.Result, [[Header.ResultSuccess, bool(ok)], [Header.ConnectionId, str(`link-${Date.now().toString(36)}`)], [Header.Id, str(routerId)]], str(text), -1);
  m.headers.set(Header.ReplyFor, i32(hello.seq));
  return m;
}
