// A router's connection as the control channel's handlers (one file per message, beside this one) see
// it: who it is, its channel, the server and network it belongs to, and its certificate renewal's state.
// router-connection.ts is the one implementation; these files never import it.
import type { Channel } from '../../channel/channel.js';
import type { Ctx } from '../../../model/context.js';
import type { RouterCerts } from '../../../model/pki/router-enroll.js';
import type { FabricLog } from '../../log.js';
import type { RouterDataModelSender } from '../../rdm/sender.js';
import type { RouterNetwork } from '../network.js';

/** What a router's hello says of it (headers 4, 10, 11). */
export interface RouterHello {
  /** Its version (the first field of header 4), and the whole header (Version|Revision|BuildDate|OS|Arch). */
  version: string;
  versionInfo: string;
  /** Its link listeners, as its peers are told them (ctrl_pb.Listener). */
  listeners: Record<string, unknown>[];
  /** Whether it manages its own links (upstream: version 0.32.1 or later, or a development build). */
  managesLinks: boolean;
  /** A 2.x router (grouped channel, 2.x headers): it is served the router data model and JWT sessions. */
  v2: boolean;
  /** Its capability mask (header 1002, a big-endian integer; 2.x), or null when its hello has none (1.x). */
  capabilitiesMask: bigint | null;
}

/** The control channel's server as a router connection uses it (listener.ts CtrlServer is the one). */
export interface RouterHost {
  readonly ctx: Ctx;
  readonly log: FabricLog;
  readonly network: RouterNetwork;
  readonly rdm: Pick<RouterDataModelSender, 'subscribe'>;
  idsOfTokens(tokens: string[]): string[];
  heartbeat(tokens: string[]): void;
  connectEvents(conn: CtrlRouter, body: { events: { identityId?: string; isConnected?: boolean }[]; fullState?: boolean }): void;
  resync(conn: CtrlRouter): Promise<void>;
}

export interface CtrlRouter {
  readonly routerId: string;
  readonly name: string;
  readonly closed: boolean;
  readonly channel: Channel;
  readonly hello: RouterHello;
  readonly server: RouterHost;
  readonly ctx: Ctx;
  readonly network: RouterNetwork;
  /** The stored fingerprint of the client certificate it is known by (renewal changes it). */
  fingerprint: string;
  /** Certificates signed for it and sent, waiting for it to confirm it holds them; one renewal at a time. */
  extension?: { certs: RouterCerts; at: number };
  extending: boolean;
  send(type: number, body: Buffer, headers?: [number, Buffer][]): void;
  unroute(circuitId: string, now?: boolean): void;
}
