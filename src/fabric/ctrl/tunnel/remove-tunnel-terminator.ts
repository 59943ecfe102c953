// RemoveTunnelTerminatorRequest (20410), the body the terminator's id: the router's tunneler stopped hosting
// (its service went away, or its session was removed). Only this router's tunnel terminators; answered by an
// empty RemoveTunnelTerminatorResponse (20411), also for one already gone, or an Error for another's.
import { message, type Message } from '../../channel/codec.js';
import { answerError } from './common.js';
import { TunnelType } from './messages.js';
import type { RouterTunneler } from './state.js';

export async function removeTunnelTerminator(t: RouterTunneler, m: Message) {
  const id = m.body.toString('utf8');
  const network = t.conn.server.network;
  const had = network.terminators.get(id);
  if (had && (had.routerId !== t.conn.routerId || had.binding !== 'tunnel')) return answerError(t, m, `invalid terminator: '${id}' is not a terminator of this router's tunneler`, 8);
  if (had) {
    await network.removeTerminators([id]);
    t.log.info({ router: t.conn.name, terminator: id }, 'ctrl: the router\'s tunneler stopped hosting a service');
  }
  t.conn.channel.reply(m, message(TunnelType.RemoveTunnelTerminatorResponse, []));
}
