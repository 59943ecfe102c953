// CircuitConfirmation: idle circuits the router still forwards.
import type { Message } from '../../channel/codec.js';
import { decode } from '../../channel/protobuf.js';
import { Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';

/** CircuitConfirmation: idle circuits the router still forwards; those this controller does not know end there. */
export function confirmCircuits(r: CtrlRouter, m: Message) {
  const { circuitIds } = decode(Schemas.CircuitConfirmation, m.body);
  for (const id of circuitIds as string[]) if (!r.network.circuits.has(id)) r.unroute(id);
}
