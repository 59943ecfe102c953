// What one router connection keeps for its own tunneler (ER/T): the API session the controller holds for
// the router's Router identity, kept from idling out while the router is connected, and the config types
// its tunneler reads. The handlers of ./ (one file per message) work on it; tunneler.ts dispatches to them.
import type { Channel } from '../../channel/channel.js';
import type { Ctx } from '../../../model/context.js';
import { touchTunnelerApiSessions, tunnelerApiSession, tunnelerIdentity, type TunnelerApiSession, type TunnelerIdentity } from '../../../model/router-tunneler.js';
import type { FabricLog } from '../../log.js';
import type { RouterNetwork } from '../network.js';

/** The router connection as its tunneler's handlers use it (router-connection.ts is one). */
export interface TunnelerRouter {
  readonly routerId: string;
  readonly name: string;
  readonly closed: boolean;
  readonly channel: Channel;
  send(type: number, body: Buffer, headers?: [number, Buffer][]): void;
  readonly server: { readonly ctx: Ctx; readonly log: FabricLog; readonly network: RouterNetwork };
}

/** How often the tunneler's API session is touched while its router is connected (well inside any idle timeout). */
const KEEP_ALIVE_MS = 60_000;
/** Config types a tunneler reads when it names none (upstream: `all`). */
const ALL = ['all'];

export class RouterTunneler {
  apiSession?: TunnelerApiSession;
  /** The config types the router's tunneler asked for (CreateApiSessionRequest), for sessions made later. */
  configTypes: string[] = ALL;
  private timer?: NodeJS.Timeout;

  constructor(readonly conn: TunnelerRouter) {}

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

const tunnelers = new WeakMap<TunnelerRouter, RouterTunneler>();

/** The tunneler state of one router connection (made on its first tunneler message). */
export function tunnelerOf(conn: TunnelerRouter): RouterTunneler {
  let t = tunnelers.get(conn);
  if (!t) tunnelers.set(conn, (t = new RouterTunneler(conn)));
  return t;
}
