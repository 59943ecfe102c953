// UpdateTerminatorRequest: an SDK's UpdateBind at the router.
import { message, type Message } from '../../channel/codec.js';
import { EdgeError } from '../../channel/messages.js';
import { decode } from '../../channel/protobuf.js';
import { checkServiceSession, Refused } from '../../session-checks.js';
import { CtrlType, Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';
import { refuse, PRECEDENCE } from './common.js';

/**
 * UpdateTerminatorRequest (an SDK's UpdateBind: a new cost or precedence): the Bind session's checks,
 * then the terminator, which must be this router's and the session's service's, changes. Answered with
 * an empty UpdateTerminatorResponse, or an Error saying why.
 */
export async function updateTerminator(r: CtrlRouter, m: Message) {
  const req = decode(Schemas.UpdateTerminatorRequest, m.body);
  try {
    const s = await checkServiceSession(r.ctx, String(req.sessionToken ?? ''), 'Bind', (req.fingerprints as string[]).map((f) => f.toLowerCase()), r.routerId, undefined, r.hello.v2);
    // Made through another controller on the database, perhaps (network.ts adoptStored).
    if (!r.network.terminators.has(String(req.terminatorId ?? ''))) await r.network.adoptStored({ ids: [String(req.terminatorId ?? '')] });
    const t = r.network.terminators.get(String(req.terminatorId ?? ''));
    if (!t || t.routerId !== r.routerId || t.serviceId !== s.serviceId) throw new Refused(`invalid terminator: no terminator '${String(req.terminatorId ?? '')}' of this session's service on this router`, EdgeError.InvalidTerminator);
    if (req.updateCost && Number(req.cost ?? 0) > 0xffff) throw new Refused(`invalid cost ${String(req.cost)}: a terminator's cost is 0 to 65535`, EdgeError.InvalidCost);
    await r.network.updateTerminator(t.id, { ...(req.updateCost ? { cost: Number(req.cost ?? 0) } : {}), ...(req.updatePrecedence ? { precedence: PRECEDENCE[Number(req.precedence ?? 0)] ?? 'default' } : {}) });
    r.channel.reply(m, message(CtrlType.UpdateTerminatorResponse, []));
  } catch (e) {
    refuse(r, m, (e as Error).message, e instanceof Refused ? e.code : EdgeError.Internal);
  }
}
