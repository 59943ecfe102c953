// One upstream OpenZiti router on the control channel (ctrl-channel-1.1.md sections 2 and 4): its
// messages go to their handlers (./handlers/, one file each; its tunneler's in ./tunnel/), the heartbeats it
// expects are echoed, and what the network asks of it (routes, unroutes, terminator validation) is sent. The network it belongs to (network.ts) holds terminators, links and circuits across routers.
import type { Channel } from '../channel/channel.js';
import { bool, message, readUint, str, type Message } from '../channel/codec.js';
import { ContentType, Header } from '../channel/messages.js';
import { decode, encode } from '../channel/protobuf.js';
import type { RouterCerts } from '../../model/pki/router-enroll.js';
import { CtrlHeader, CtrlType, Schemas } from './messages.js';
import type { RouteStep } from './paths.js';
import { handleTunnelerMessage, isTunnelerMessage } from './tunnel/tunneler.js';
import { CTRL_HANDLERS } from './handlers/index.js';
import type { CtrlRouter, RouterHello, RouterHost } from './handlers/router.js';

export type { RouterHello, RouterHost } from './handlers/router.js';

/** How long a router has to answer a terminator validation (upstream's router gives its checks 30 s). */
const VALIDATE_TIMEOUT_MS = 35_000;

export class RouterConn implements CtrlRouter {
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
  extension?: { certs: RouterCerts; at: number };
  extending = false;

  constructor(
    readonly server: RouterHost,
    readonly routerId: string,
    readonly name: string,
    readonly channel: Channel,
    readonly hello: RouterHello,
    /** The stored fingerprint of the client certificate this connection was made with. */
    public fingerprint: string,
  ) {}

  get ctx() {
    return this.server.ctx;
  }

  get network() {
    return this.server.network;
  }

  send(type: number, body: Buffer, headers: [number, Buffer][] = []) {
    this.channel.send(message(type, headers, body));
  }

  /** What was sent has left this process (or the connection closed). */
  drained(): Promise<void> {
    return this.channel.drained();
  }

  handle(m: Message) {
    this.heard?.();
    // Heartbeats ride on any message (header 5); the router marks us unresponsive without the echo.
    const beat = m.headers.get(Header.Heartbeat);
    if (beat) this.channel.send(message(ContentType.Heartbeat, [[Header.HeartbeatResponse, beat]]));
    const failed = (what: string) => (e: unknown) => this.server.log.warn({ err: String(e), router: this.name }, `ctrl: ${what} failed`);
    const handler = CTRL_HANDLERS.get(m.type);
    // A handler's failure (a malformed body among them) is logged; the router stays connected, as upstream's does.
    if (handler) return void (async () => handler[0](this, m))().catch(failed(handler[1]));
    switch (m.type) {
      case ContentType.Ping:
      case ContentType.Latency:
        this.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
        return;
      case CtrlType.RouteResult: {
        const key = `${m.body.toString('utf8')}/${readUint(m.headers.get(CtrlHeader.RouteAttempt))}`;
        this.routeWaiters.get(key)?.(m);
        return;
      }
      default:
        // The router's own tunneler (its `tunnel` listener binding): one handler per message in ./tunnel/.
        if (isTunnelerMessage(m.type)) return void handleTunnelerMessage(this, m).catch(failed('tunneler request'));
        // The reconnecting dialer's probe (-33), traces, newer types: dropped, as upstream drops what it does not know.
        return;
    }
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

  /** The connection ended: waiting routes fail at once; the network forgets what lived on this router. */
  ended() {
    this.closed = true;
    this.heard?.();
    for (const w of [...this.routeWaiters.values()]) w(message(CtrlType.RouteResult, [[CtrlHeader.RouteError, str('the router disconnected')]]));
  }
}
