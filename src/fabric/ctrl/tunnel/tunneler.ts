// One upstream router's own tunneler ("ER/T": its `tunnel` listener binding, in host, proxy or tproxy mode)
// as the control channel serves it: which message goes to which handler (one file each, beside this one),
// and what a connection keeps for it (the API session the controller holds for the router's identity,
// kept from idling out while the router is connected; the config types its tunneler reads).
//
// The router's identity is the Router identity its system edge router policy names (model/router-tunneler.ts).
// A 1.x router is told sessions (its tunneler listens for their removal to drop a terminator or a
// connection); a 2.x router is told none (advisory 10: its hosting is checked against the policies alone).
// Both get the same checks, and what they make rides on a session the controller keeps for the identity,
// so that losing a grant or a router policy ends it as it ends an SDK's (fabric/access-watch.ts, the
// control channel's sync).
import type { Message } from '../../channel/codec.js';
import { touchTunnelerApiSessions, tunnelerApiSession, tunnelerIdentity, type TunnelerApiSession, type TunnelerIdentity } from '../../../model/router-tunneler.js';
import type { RouterConn } from '../router-connection.js';
import { createApiSession } from './create-api-session.js';
import { createCircuitForService } from './create-circuit-for-service.js';
import { createTunnelCircuitV2 } from './create-tunnel-circuit-v2.js';
import { createTunnelTerminator } from './create-tunnel-terminator.js';
import { createTunnelTerminatorV2 } from './create-tunnel-terminator-v2.js';
import { listServices } from './list-services.js';
import { removeTunnelTerminator } from './remove-tunnel-terminator.js';
import { tunnelHealthEvent } from './tunnel-health-event.js';
import { updateTunnelTerminator } from './update-tunnel-terminator.js';
import { TunnelType } from './messages.js';

/** How often the tunneler's API session is touched while its router is connected (well inside any idle timeout). */
const KEEP_ALIVE_MS = 60_000;
/** Config types a tunneler reads when it names none (upstream: `all`). */
const ALL = ['all'];

export class RouterTunneler {
  apiSession?: TunnelerApiSession;
  /** The config types the router's tunneler asked for (CreateApiSessionRequest), for sessions made later. */
  configTypes: string[] = ALL;
  private timer?: NodeJS.Timeout;

  constructor(readonly conn: RouterConn) {}

  get ctx() {
    return this.conn.server.ctx;
  }

  get log() {
    return this.conn.server.log;
  }

  /** The router's identity (refused: tunneling not enabled). */
  identity(): Promise<TunnelerIdentity> {
    return tunnelerIdentity(this.ctx, this.conn.routerId);
  }

  /** The identity's API session, made when there is none; whether it is new (a 1.x router is then told it). */
  async ensureApiSession(identity: TunnelerIdentity, configTypes?: string[]): Promise<{ apiSession: TunnelerApiSession; fresh: boolean }> {
    if (configTypes?.length) this.configTypes = configTypes;
    const before = this.apiSession?.id;
    this.apiSession = await tunnelerApiSession(this.ctx, identity, this.configTypes);
    this.keepAlive();
    return { apiSession: this.apiSession, fresh: this.apiSession.id !== before };
  }

  private keepAlive() {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.conn.closed) return void clearInterval(this.timer);
      if (this.apiSession) void touchTunnelerApiSessions(this.ctx, [this.apiSession.id]).catch(() => {});
    }, KEEP_ALIVE_MS);
    this.timer.unref();
  }
}

const tunnelers = new WeakMap<RouterConn, RouterTunneler>();

/** The tunneler state of one router connection (made on its first tunneler message). */
export function tunnelerOf(conn: RouterConn): RouterTunneler {
  let t = tunnelers.get(conn);
  if (!t) tunnelers.set(conn, (t = new RouterTunneler(conn)));
  return t;
}

type Handler = (t: RouterTunneler, m: Message) => Promise<void>;

const HANDLERS = new Map<number, Handler>([
  [TunnelType.CreateApiSessionRequest, createApiSession],
  [TunnelType.ListServicesRequest, listServices],
  [TunnelType.CreateTunnelTerminatorRequest, createTunnelTerminator],
  [TunnelType.CreateTunnelTerminatorRequestV2, createTunnelTerminatorV2],
  [TunnelType.CreateCircuitForServiceRequest, createCircuitForService],
  [TunnelType.CreateTunnelCircuitV2Request, createTunnelCircuitV2],
  [TunnelType.RemoveTunnelTerminatorRequest, removeTunnelTerminator],
  [TunnelType.UpdateTunnelTerminatorRequest, updateTunnelTerminator],
  [TunnelType.TunnelHealthEvent, tunnelHealthEvent],
]);

/** Whether a content type is one of the tunneler's requests. */
export const isTunnelerMessage = (type: number) => HANDLERS.has(type);

/** Serve one tunneler request of `conn`'s router. */
export function handleTunnelerMessage(conn: RouterConn, m: Message): Promise<void> {
  return HANDLERS.get(m.type)!(tunnelerOf(conn), m);
}

