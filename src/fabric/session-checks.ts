// The checks every Dial and Bind passes, whether an SDK sent it to the embedded router or an upstream router
// forwarded it over the control channel (as upstream's controller checks them, edge-protocol.md section 6).
import type { Ctx } from '../model/context.js';
import { liveApiSession, policiesAllow, sessionForEdge, type EdgeApiSession, type EdgeSession } from '../model/data-plane.js';
import { EdgeError } from './channel/messages.js';

export class Refused extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/**
 * The service session behind `token`, if it is of `type`, its API session is live and one of `fingerprints`
 * belongs to it (not necessarily the channel's own API session: an SDK that logged in again keeps using
 * sessions of the older one), and the policies still grant it on `routerId`.
 */
export async function checkServiceSession(ctx: Ctx, token: string, type: 'Dial' | 'Bind', fingerprints: string[], routerId: string, known?: EdgeApiSession): Promise<EdgeSession> {
  const s = await sessionForEdge(ctx, token);
  if (!s) throw new Refused('invalid session', EdgeError.InvalidSession);
  if (s.type !== type) throw new Refused(`incorrect session type: a ${s.type} session cannot ${type === 'Dial' ? 'dial' : 'bind'}`, EdgeError.WrongSessionType);
  const owner = known && s.apiSessionId === known.id ? known : await liveApiSession(ctx, s.apiSessionId);
  if (!owner || !fingerprints.some((f) => owner.fingerprints.has(f))) throw new Refused('invalid api session', EdgeError.InvalidApiSession);
  const allowed = await policiesAllow(ctx, s.identityId, s.serviceId, routerId, type === 'Dial' ? 'dial' : 'bind');
  if (!allowed.grant) throw new Refused(`invalid session: no service policy grants ${type} on '${s.serviceName}' any more`, EdgeError.InvalidSession);
  if (!allowed.router) throw new Refused('invalid edge router for session', EdgeError.InvalidEdgeRouterForSession);
  return s;
}
