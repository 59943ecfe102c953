// CreateCircuitForServiceRequest (20402), a 1.x router's tunneler with a connection it intercepted (proxy or
// tproxy mode) for a service by name: a circuit from this router, answered by CreateCircuitForServiceResponse
// (20403) with the Dial session it is under (the router closes the connection when that session is
// removed), the API session when new, the circuit id, the ingress address, the peer data and the tags.
import { message, type Message } from '../../channel/codec.js';
import { decode, encode } from '../../channel/protobuf.js';
import { serviceByName } from '../../../model/router-tunneler.js';
import { apiSessionResponse, dialFailed, tunnelCircuit } from './common.js';
import { TunnelSchemas, TunnelType } from './messages.js';
import type { RouterTunneler } from './state.js';

export async function createCircuitForService(t: RouterTunneler, m: Message) {
  const req = decode(TunnelSchemas.CreateCircuitForServiceRequest, m.body);
  try {
    const identity = await t.identity();
    const { apiSession, fresh } = await t.ensureApiSession(identity);
    const service = await serviceByName(t.ctx, String(req.serviceName ?? ''));
    const routed = await tunnelCircuit(t, identity, apiSession, service, String(req.terminatorInstanceId ?? ''), req.peerData ?? {});
    const body = encode(TunnelSchemas.CreateCircuitForServiceResponse, {
      ...(fresh ? { apiSession: apiSessionResponse(t, identity, apiSession) } : {}),
      session: { sessionId: routed.sessionId, token: routed.sessionId },
      circuitId: routed.circuit.id,
      address: routed.circuit.ingressId,
      peerData: routed.peerData,
      tags: routed.tags,
    });
    t.conn.channel.reply(m, message(TunnelType.CreateCircuitForServiceResponse, [], body));
  } catch (e) {
    dialFailed(t, m, e);
  }
}
