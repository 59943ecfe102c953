// CreateTunnelTerminatorRequestV2 (20413), a 2.x router's tunneler (or a 1.x one in HA mode) hosting a
// service it found in the router data model: no session on the wire (openziti-2x.md advisory 10), checked
// against the service policies, the edge router policies and the service edge router policies, the
// missing one named. Answered by CreateTunnelTerminatorResponseV2 (20414) with the result (2.x reads
// result, msg and errorCode; FailedOther ends its attempts until the service changes).
import { message, type Message } from '../../channel/codec.js';
import { decode, encode } from '../../channel/protobuf.js';
import { failureOf } from '../../dial-failures.js';
import { serviceById } from '../../../model/router-tunneler.js';
import { TerminatorResult } from '../messages.js';
import { asRefused, storeTunnelTerminator } from './common.js';
import { TunnelSchemas, TunnelType } from './messages.js';
import type { RouterTunneler } from './state.js';

export async function createTunnelTerminatorV2(t: RouterTunneler, m: Message) {
  const req = decode(TunnelSchemas.CreateTunnelTerminatorRequestV2, m.body);
  const answer = (o: { result: number; msg?: string; errorCode?: number }) =>
    t.conn.channel.reply(m, message(TunnelType.CreateTunnelTerminatorResponseV2, [], encode(TunnelSchemas.CreateTunnelTerminatorResponseV2, { terminatorId: req.address, startTime: req.startTime ?? 0n, ...o })));
  try {
    const identity = await t.identity();
    const { apiSession } = await t.ensureApiSession(identity);
    const service = await serviceById(t.ctx, String(req.serviceId ?? ''));
    await storeTunnelTerminator(t, identity, apiSession, { address: String(req.address ?? ''), service, cost: Number(req.cost ?? 0), precedence: Number(req.precedence ?? 0), instanceId: String(req.instanceId ?? ''), peerData: req.peerData ?? {} });
    answer({ result: TerminatorResult.Success });
  } catch (e) {
    const f = failureOf(asRefused(e));
    t.log.info({ router: t.conn.name, serviceId: req.serviceId, reason: f.reason }, 'ctrl: refused a terminator of the router\'s tunneler');
    answer({ result: TerminatorResult.FailedOther, msg: f.reason, errorCode: f.code });
  }
}
