// CreateCircuitV2Request (ctrl-channel-1.1.md 2.6).
import { message, str, type Message } from '../../channel/codec.js';
import { CtrlHeader, CtrlType } from '../messages.js';
import { decodeBytesMap, decodeStrings, encodeBytesMap, encodeStringMap } from '../wire.js';
import type { CtrlRouter } from './router.js';
import { dialFailed, routeCircuit } from './common.js';

/** CreateCircuitV2 (section 2.6): everything in headers; the answer too. */
export async function createCircuit(r: CtrlRouter, m: Message) {
  try {
    const routed = await routeCircuit(r, {
      token: m.headers.get(CtrlHeader.CircuitSessionToken)?.toString('utf8') ?? '',
      fingerprints: decodeStrings(m.headers.get(CtrlHeader.CircuitFingerprints)),
      instanceId: m.headers.get(CtrlHeader.CircuitTerminatorInstanceId)?.toString('utf8') || undefined,
      peerData: decodeBytesMap(m.headers.get(CtrlHeader.CircuitPeerData)),
      apiSessionToken: m.headers.get(CtrlHeader.CircuitApiSessionToken)?.toString('utf8') || undefined,
    });
    r.channel.reply(
      m,
      message(CtrlType.CreateCircuitV2Response, [
        [CtrlHeader.ResponseCircuitId, str(routed.circuit.id)],
        [CtrlHeader.ResponseAddress, str(routed.circuit.ingressId)],
        [CtrlHeader.ResponsePeerData, encodeBytesMap(routed.peerData)],
        [CtrlHeader.ResponseTags, encodeStringMap(routed.tags)],
      ]),
    );
  } catch (e) {
    dialFailed(r, m, e);
  }
}
