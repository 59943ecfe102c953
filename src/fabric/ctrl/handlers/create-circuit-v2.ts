// CreateCircuitV2Request (ctrl-channel-1.1.md 2.6).
import type { Message } from '../../channel/codec.js';
import { CtrlHeader, CtrlType } from '../messages.js';
import type { CtrlRouter } from './router.js';
import { answerCircuit, circuitRequestOf, dialFailed, routeCircuit } from './common.js';

/** CreateCircuitV2 (section 2.6): everything in headers; the answer too. */
export async function createCircuit(r: CtrlRouter, m: Message) {
  try {
    const routed = await routeCircuit(r, { token: m.headers.get(CtrlHeader.CircuitSessionToken)?.toString('utf8') ?? '', ...circuitRequestOf(m) });
    answerCircuit(r, m, CtrlType.CreateCircuitV2Response, routed);
  } catch (e) {
    dialFailed(r, m, e);
  }
}
