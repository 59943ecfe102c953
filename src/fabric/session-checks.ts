// The checks every Dial and Bind passes, whether an SDK sent it to the embedded router or an upstream router
// forwarded it over the control channel (as upstream's controller checks them, edge-protocol.md section 6).
import type { Ctx } from '../model/context.js';
import { liveApiSession, type EdgeApiSession, type EdgeSession } from '../model/data-plane.js';
import { sessionForDial } from '../model/dial-check.js';
import { EdgeError } from './channel/messages.js';
import { grantsFor } from '../model/policy/access.js';
import { checksOfIdentity, failingChecks, postureLeftToRouters, responsesOf } from '../model/posture/evaluate.js';

/** Who a refused dial or bind was (known once its session was found). */
export interface Who {
  serviceId: string;
  serviceName: string;
  identityId: string;
  identityName: string;
}

/**
 * A Dial or Bind refused: the text the SDK is told, its edge error code, and for a dial the failure
 * cause it is counted under (dial-failures.ts; upstream's circuit failure causes where it has them).
 */
export class Refused extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly failure?: string,
    public who?: Who,
  ) {
    super(message);
  }
}

/**
 * The service session behind `token`, if it is of `type`, its API session is live and one of `fingerprints`
 * belongs to it (not necessarily the channel's own API session: an SDK that logged in again keeps using
 * sessions of the older one), and the policies still grant it on `routerId`.
 */
export async function checkServiceSession(ctx: Ctx, token: string, type: 'Dial' | 'Bind', fingerprints: string[], routerId: string, known?: EdgeApiSession, routerJudgesPosture = false): Promise<EdgeSession> {
  // The session and what the policies say of it, in one statement; refused in the order upstream checks.
  const found = await sessionForDial(ctx, token, type === 'Dial' ? 'dial' : 'bind', routerId);
  if (!found) throw new Refused('invalid session', EdgeError.InvalidSession);
  const { session: s, ...allowed } = found;
  if (s.type !== type) throw new Refused(`incorrect session type: a ${s.type} session cannot ${type === 'Dial' ? 'dial' : 'bind'}`, EdgeError.WrongSessionType);
  const owner = known && s.apiSessionId === known.id ? known : await liveApiSession(ctx, s.apiSessionId);
  if (!owner || !fingerprints.some((f) => owner.fingerprints.has(f))) throw new Refused('invalid api session', EdgeError.InvalidApiSession);
  const who = { serviceId: s.serviceId, serviceName: s.serviceName, identityId: s.identityId, identityName: s.identityName };
  if (!allowed.grant) throw new Refused(`invalid session: no service policy grants ${type} on '${s.serviceName}' any more`, EdgeError.InvalidSession, 'ACCESS_DENIED', who);
  if (!allowed.router) throw new Refused('invalid edge router for session: no edge router policy or service edge router policy lets this identity and service use this router', EdgeError.InvalidEdgeRouterForSession, 'INVALID_EDGE_ROUTER_FOR_SESSION', who);
  if (!routerJudgesPosture) await checkPostureLeftToRouters(ctx, s, type);
  return s;
}

/**
 * A JWT API session whose SDK sent this controller no posture responses had its sessions made without
 * posture checks (model/posture/evaluate.ts postureLeftToRouters: 2.x routers judge them). On a router
 * that does not (the embedded router) its Dial or Bind is judged here, with what the controller holds:
 * refused when every policy granting it has a failing enforced check.
 */
async function checkPostureLeftToRouters(ctx: Ctx, s: EdgeSession, type: 'Dial' | 'Bind') {
  // A legacy session's posture was judged when it was made, and is by the access watch: no query here.
  if (!s.jwt) return;
  const kind = type === 'Dial' ? 'dial' : 'bind';
  const checks = await checksOfIdentity(ctx.store.db, s.identityId, [kind]);
  if (!checks.size || !(await postureLeftToRouters(ctx.store.db, [s.apiSessionId])).size) return;
  const [grants, responses] = await Promise.all([grantsFor(ctx.store.db, s.identityId, [s.serviceId]), responsesOf(ctx.store.db, s.apiSessionId)]);
  const now = ctx.clock.now();
  const failing = grants.filter((g) => g.kind === kind).map((g) => failingChecks(checks.get(g.policyId) ?? [], responses, now).enforced);
  if (failing.length && failing.every((f) => f.length)) {
    const names = [...new Set(failing.flat().map((c) => c.name))];
    throw new Refused(`the posture checks of every policy granting ${type} on '${s.serviceName}' fail: ${names.join(', ')} (no posture responses were sent to the controller)`, EdgeError.Internal);
  }
}

