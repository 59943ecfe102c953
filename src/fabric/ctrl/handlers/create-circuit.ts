// CreateCircuitRequest, the legacy form.
import { message, type Message } from '../../channel/codec.js';
import { decode, encode } from '../../channel/protobuf.js';
import { CtrlType, Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';
import { dialFailed, routeCircuit } from './common.js';

/** The legacy CreateCircuitRequest: the same circuit, request and answer as protobuf bodies. */
export async function createCircuitV1(r: CtrlRouter, m: Message) {
  const req = decode(Schemas.CreateCircuitRequest, m.body);
  try {
    const peerData = new Map(Object.entries((req.peerData ?? {}) as Record<string, Buffer>).map(([k, v]) => [Number(k), v]));
    const routed = await routeCircuit(r, { token: req.sessionToken ?? '', fingerprints: req.fingerprints as string[], instanceId: req.terminatorInstanceId || undefined, peerData, apiSessionToken: req.apiSessionToken || undefined });
    const body = encode(Schemas.CreateCircuitResponse, { circuitId: routed.circuit.id, address: routed.circuit.ingressId, peerData: routed.peerData, tags: routed.tags });
    r.channel.reply(m, message(CtrlType.CreateCircuitResponse, [], body));
  } catch (e) {
    dialFailed(r, m, e);
  }
}
