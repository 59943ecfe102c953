// Failed dials say why (issue 43, item 5), on every router alike: the SDK is told the reason and its
// edge error code; the controller logs one line naming the service, the identity, the router and the
// cause; a fabric.circuits event of type failed carries the cause (upstream's circuit failure causes:
// NO_TERMINATORS, NO_PATH, ROUTER_ERR_*, ROUTER_RESPONSE_TIMEOUT; ztc's for what upstream refuses before
// a circuit exists: ACCESS_DENIED, INVALID_SESSION...), and the metrics count it from that event
// (ztc_dial_failures_total{cause}, server/metrics.ts).
import { randomUUID } from 'node:crypto';
import type { Ctx } from '../model/context.js';
import type { CircuitEvent } from '../model/events/types.js';
import { EdgeError } from './channel/messages.js';
import type { FabricLog } from './log.js';
import { Refused, type Who } from './session-checks.js';

/** The cause of a refusal that names none, by its edge error code. */
const BY_CODE: Record<number, string> = {
  [EdgeError.Internal]: 'INTERNAL',
  [EdgeError.InvalidApiSession]: 'INVALID_API_SESSION',
  [EdgeError.InvalidSession]: 'INVALID_SESSION',
  [EdgeError.WrongSessionType]: 'WRONG_SESSION_TYPE',
  [EdgeError.InvalidEdgeRouterForSession]: 'INVALID_EDGE_ROUTER_FOR_SESSION',
  [EdgeError.InvalidService]: 'INVALID_SERVICE',
  [EdgeError.InvalidTerminator]: 'ROUTER_ERR_INVALID_TERMINATOR',
  [EdgeError.EncryptionDataMissing]: 'ENCRYPTION_DATA_MISSING',
};

/** RouteResult error codes (header 1104) as upstream names the failures they cause. */
export const ROUTE_ERROR_CAUSES = ['ROUTER_ERR_GENERIC', 'ROUTER_ERR_INVALID_TERMINATOR', 'ROUTER_ERR_MISCONFIGURED_TERMINATOR', 'ROUTER_ERR_DIAL_TIMED_OUT', 'ROUTER_ERR_CONN_REFUSED'];

/** What a failed dial is reported with: its text, edge error code and cause, whatever was thrown. */
export function failureOf(e: unknown): { reason: string; code: number; cause: string; who?: Who } {
  if (e instanceof Refused) return { reason: e.message, code: e.code, cause: e.failure ?? BY_CODE[e.code] ?? 'INTERNAL', who: e.who };
  return { reason: `failed to dial: ${(e as Error)?.message ?? String(e)}`, code: EdgeError.Internal, cause: 'INTERNAL' };
}

export interface DialFailure {
  /** The router the dial arrived at, and its name. */
  routerId: string;
  routerName: string;
  reason: string;
  code: number;
  cause: string;
  /** The dialing identity and the service, as far as they are known (an unknown token names neither). */
  serviceId?: string;
  serviceName?: string;
  identityId?: string;
  identityName?: string;
}

/** One failed dial: its log line and its event. */
export function reportDialFailure(ctx: Ctx, log: FabricLog, f: DialFailure) {
  log.info(
    { service: f.serviceName ?? f.serviceId ?? '(unknown)', identity: f.identityName ?? f.identityId ?? '(unknown)', router: f.routerName, cause: f.cause, reason: f.reason },
    `dial failed: ${f.identityName ?? f.identityId ?? 'an unknown identity'} -> ${f.serviceName ?? f.serviceId ?? 'an unknown service'} on router ${f.routerName}: ${f.cause}`,
  );
  ctx.events.emit(ctx.events.stamp<CircuitEvent>({
    namespace: 'fabric.circuits',
    event_type: 'failed',
    circuit_id: randomUUID(),
    client_id: f.identityId ?? '',
    service_id: f.serviceId ?? '',
    terminator_id: '',
    path: { nodes: [f.routerId], links: [] },
    link_count: 0,
    failure_cause: f.cause,
    failure_reason: f.reason,
  }));
}
