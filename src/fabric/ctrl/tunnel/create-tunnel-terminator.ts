// CreateTunnelTerminatorRequest (20406), a 1.x router's tunneler hosting a service it may Bind (host.v1,
// host.v2): sent without waiting for a reply; answered by CreateTunnelTerminatorResponse (20407) with the
// Bind session it is now under (the router drops the terminator when that session is removed) and, when
// it is new, the API session. A refusal is logged naming the missing policy, and not answered (as upstream:
// the router tries again later, every 5 s growing to 5 min).
import { message, type Message } from '../../channel/codec.js';
import { decode, encode } from '../../channel/protobuf.js';
import { serviceByName } from '../../../model/router-tunneler.js';
import { apiSessionResponse, storeTunnelTerminator, terminatorRefused } from './common.js';
import { TunnelSchemas, TunnelType } from './messages.js';
import type { RouterTunneler } from './state.js';

export async function createTunnelTerminator(t: RouterTunneler, m: Message) {
  const req = decode(TunnelSchemas.CreateTunnelTerminatorRequest, m.body);
  try {
    const identity = await t.identity();
    const { apiSession, fresh } = await t.ensureApiSession(identity);
    const service = await serviceByName(t.ctx, String(req.serviceName ?? ''));
    const session = await storeTunnelTerminator(t, identity, apiSession, { address: String(req.address ?? ''), service, cost: Number(req.cost ?? 0), precedence: Number(req.precedence ?? 0), instanceId: String(req.instanceId ?? ''), peerData: req.peerData ?? {} });
    const body = encode(TunnelSchemas.CreateTunnelTerminatorResponse, {
      ...(fresh ? { apiSession: apiSessionResponse(t, identity, apiSession) } : {}),
      session: { sessionId: session.id, token: session.id },
      terminatorId: req.address,
      startTime: req.startTime ?? 0n,
    });
    t.conn.channel.reply(m, message(TunnelType.CreateTunnelTerminatorResponse, [], body));
  } catch (e) {
    terminatorRefused(t, e, String(req.serviceName ?? ''));
  }
}
