// CreateCircuitV3Request (2.1's Connect-V2; ctrl-channel-2.x.md section 1.5d): a dial a 2.1 router
// authorized from its data model for an OIDC API session, naming the identity and the service instead of
// a service session. The controller checks the access token and the policies again
// (model/data-plane.ts connectV2Session), then routes it as a CreateCircuitV2 (common.ts routeCircuit)
// and answers with the same headers; a refusal is the same Error (20002) with its code and retry hint.
import type { Message } from '../../channel/codec.js';
import { EdgeError } from '../../channel/messages.js';
import { connectV2Session, ConnectV2Refusal } from '../../../model/data-plane.js';
import { Refused } from '../../session-checks.js';
import { CtrlHeader, CtrlType } from '../messages.js';
import type { CtrlRouter } from './router.js';
import { answerCircuit, circuitRequestOf, dialFailed, routeCircuit } from './common.js';

const CODES = { 'api-session': EdgeError.InvalidApiSession, service: EdgeError.InvalidService, access: EdgeError.InvalidService } as const;

export async function createCircuitV3(r: CtrlRouter, m: Message) {
  const header = (id: number) => m.headers.get(id)?.toString('utf8') ?? '';
  try {
    const q = circuitRequestOf(m);
    const token = await connectV2Session(r.ctx, q.apiSessionToken ?? '', header(CtrlHeader.CircuitIdentityId), header(CtrlHeader.CircuitServiceId)).catch((e: unknown) => {
      if (!(e instanceof ConnectV2Refusal)) throw e;
      const who = e.who && { identityId: e.who.identityId, identityName: e.who.identityName ?? e.who.identityId, serviceId: e.who.serviceId ?? '', serviceName: e.who.serviceName ?? e.who.serviceId ?? '' };
      throw new Refused(e.message, CODES[e.kind], e.kind === 'access' ? 'ACCESS_DENIED' : undefined, who);
    });
    // A circuit id the router chose (upstream's routers send it empty for now): kept when given.
    const routed = await routeCircuit(r, { ...q, token, circuitId: header(CtrlHeader.CircuitId) || undefined });
    answerCircuit(r, m, CtrlType.CreateCircuitV3Response, routed);
  } catch (e) {
    dialFailed(r, m, e);
  }
}
