// Fault: a circuit's end or a link failed at the router.
import type { Message } from '../../channel/codec.js';
import { decode } from '../../channel/protobuf.js';
import { FaultSubject, Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';

/** An end of a circuit closed, or a link failed (section 2.7): the circuit ends, or moves off the link. */
export async function fault(r: CtrlRouter, m: Message) {
  const f = decode(Schemas.Fault, m.body);
  if (!f.id) return;
  // proto3 leaves zero values out: no subject on the wire is IngressFault.
  const subject = Number(f.subject ?? FaultSubject.IngressFault);
  if (subject === FaultSubject.LinkFault || subject === FaultSubject.LinkDuplicateFault) return r.network.linkGone(f.id, f.iteration === undefined ? undefined : Number(f.iteration), subject === FaultSubject.LinkDuplicateFault);
  const c = r.network.circuits.get(f.id);
  if (c) r.network.endCircuit(c, true);
  // A circuit this controller does not know (routed before a restart): the reporting router drops it.
  // One it ended a moment ago (the other end's Fault came first) was unrouted then.
  else if (!r.network.endedLately(f.id)) r.unroute(f.id);
}
