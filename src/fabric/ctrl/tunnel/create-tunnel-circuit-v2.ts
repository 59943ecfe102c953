// CreateTunnelCircuitV2Request (20220), a 2.x router's tunneler (or a 1.x one in HA mode) with a connection it
// intercepted: the same circuit as CreateCircuitForService, with no session on the wire; answered by
// CreateTunnelCircuitV2Response (20221): circuit id, ingress address, peer data, tags.
import { message, type Message } from '../../channel/codec.js';
import { decode, encode } from '../../channel/protobuf.js';
import { serviceByName } from '../../../model/router-tunneler.js';
import { dialFailed, tunnelCircuit } from './common.js';
import { TunnelSchemas, TunnelType } from './messages.js';
import type { RouterTunneler } from './state.js';

export async function createTunnelCircuitV2(t: RouterTunneler, m: Message) {
  const req = decode(TunnelSchemas.CreateTunnelCircuitV2Request, m.body);
  try {
    const identity = await t.identity();
    const { apiSession } = await t.ensureApiSession(identity);
    const service = await serviceByName(t.ctx, String(req.serviceName ?? ''));
    const routed = await tunnelCircuit(t, identity, apiSession, service, String(req.terminatorInstanceId ?? ''), req.peerData ?? {});
    const body = encode(TunnelSchemas.CreateTunnelCircuitV2Response, { circuitId: routed.circuit.id, address: routed.circuit.ingressId, peerData: routed.peerData, tags: routed.tags });
    t.conn.channel.reply(m, message(TunnelType.CreateTunnelCircuitV2Response, [], body));
  } catch (e) {
    dialFailed(t, m, e);
  }
}
