// One upstream router's own tunneler ("ER/T": its `tunnel` listener binding, in host, proxy or tproxy mode)
// as the control channel serves it: which message goes to which handler (one file each, beside this one;
// what a connection keeps for its tunneler is state.ts).
//
// The router's identity is the Router identity its system edge router policy names (model/router-tunneler.ts).
// A 1.x router is told sessions (its tunneler listens for their removal to drop a terminator or a
// connection); a 2.x router is told none (advisory 10: its hosting is checked against the policies alone).
// Both get the same checks, and what they make rides on a session the controller keeps for the identity,
// so that losing a grant or a router policy ends it as it ends an SDK's (fabric/access-watch.ts, the
// control channel's sync).
import type { Message } from '../../channel/codec.js';
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
import { tunnelerOf, type RouterTunneler, type TunnelerRouter } from './state.js';

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
export function handleTunnelerMessage(conn: TunnelerRouter, m: Message): Promise<void> {
  return HANDLERS.get(m.type)!(tunnelerOf(conn), m);
}

