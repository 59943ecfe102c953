// UpdateTunnelTerminatorRequest (20408): a new cost or precedence for one of this router's tunnel terminators
// (a host.v2 health check's action, or the identity's hosting settings changed); answered by an empty
// UpdateTunnelTerminatorResponse (20409), or an Error saying why not.
import { message, type Message } from '../../channel/codec.js';
import { decode } from '../../channel/protobuf.js';
import { answerError, PRECEDENCES } from './common.js';
import { TunnelSchemas, TunnelType } from './messages.js';
import type { RouterTunneler } from './state.js';

export async function updateTunnelTerminator(t: RouterTunneler, m: Message) {
  const req = decode(TunnelSchemas.UpdateTunnelTerminatorRequest, m.body);
  const id = String(req.terminatorId ?? '');
  const had = t.conn.server.network.terminators.get(id);
  if (!had || had.routerId !== t.conn.routerId || had.binding !== 'tunnel') return answerError(t, m, `invalid terminator: no terminator '${id}' of this router's tunneler`, 8);
  const cost = Number(req.cost ?? 0);
  if (req.updateCost && cost > 0xffff) return answerError(t, m, `invalid cost ${cost}: a terminator's cost is 0 to 65535`, 10);
  const precedence = PRECEDENCES[Number(req.precedence ?? 0)];
  if (req.updatePrecedence && !precedence) return answerError(t, m, `invalid precedence ${String(req.precedence)}: default (0), required (1) or failed (2)`, 9);
  await t.conn.server.network.updateTerminator(id, { ...(req.updateCost ? { cost } : {}), ...(req.updatePrecedence ? { precedence } : {}) });
  t.conn.channel.reply(m, message(TunnelType.UpdateTunnelTerminatorResponse, []));
}
