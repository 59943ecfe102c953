// What several of the control channel's handlers share: how a request is refused, a dial's failure
// reported, a Bind session's terminator stored, a circuit's checks made and routed.
import { message, str, u32, type Message } from '../../channel/codec.js';
import { EdgeError, Header } from '../../channel/messages.js';
import { accessTokenOf, sessionTokenForServiceId } from '../../../model/data-plane.js';
import { adoptRouterCerts, type RouterCerts } from '../../../model/pki/router-enroll.js';
import { failureOf, reportDialFailure } from '../../dial-failures.js';
import { checkServiceSession, Refused } from '../../session-checks.js';
import type { Precedence } from '../../terminators.js';
import { CtrlHeader, CtrlType } from '../messages.js';
import type { RoutedCircuit } from '../network.js';
import { decodeBytesMap, decodeStrings, encodeBytesMap, encodeStringMap } from '../wire.js';
import type { CtrlRouter } from './router.js';

/** UpdateBind's and CreateTerminator's precedence numbers, as the edge protocol sends them. */
export const PRECEDENCE: Precedence[] = ['default', 'required', 'failed'];
const PUBLIC_KEY = 1003;

/** Whether a router (and its SDK) may try a refused request again (sdk-golang edge.RetryHint). */
export const RetryHint = { Default: 0, TooBusy: 1, StartOver: 2, NotRetriable: 3 } as const;

/**
 * The hint for a refusal's edge error code, as upstream's controller gives it (handler_edge_ctrl/errors.go):
 * a session that is not (or no longer) good is started over, an unknown service or a malformed request is
 * not worth retrying, anything else may be tried again. No terminator (code 8 from a dial) is an
 * internal error upstream, retried by default: it may appear a moment later.
 */
export function retryHintOf(code: number, dial = true): number {
  switch (code) {
    case EdgeError.InvalidApiSession:
    case EdgeError.InvalidSession:
    case EdgeError.WrongSessionType:
    case EdgeError.InvalidEdgeRouterForSession:
    case EdgeError.EncryptionDataMissing:
      return RetryHint.StartOver;
    case EdgeError.InvalidService:
    case EdgeError.InvalidPrecedence:
    case EdgeError.InvalidCost:
      return RetryHint.NotRetriable;
    case EdgeError.InvalidTerminator:
      return dial ? RetryHint.Default : RetryHint.NotRetriable;
    default:
      return RetryHint.Default;
  }
}

/** An Error (20002) in reply: the text, the edge error code (header 1014) and the retry hint (18, read by 2.1 routers; others skip it). */
export function refuse(r: CtrlRouter, to: Message, text: string, code: number, hint = retryHintOf(code, false)) {
  r.channel.reply(to, message(CtrlType.Error, [[CtrlHeader.EdgeErrorCode, u32(code)], [CtrlHeader.ErrorRetryHint, u32(hint)]], str(text)));
}

/** A CreateCircuit refused: the router is told why (its SDK hears the text), and the failure is reported (dial-failures.ts). */
export function dialFailed(r: CtrlRouter, m: Message, e: unknown) {
  const f = failureOf(e);
  refuse(r, m, f.reason, f.code, retryHintOf(f.code));
  reportDialFailure(r.ctx, r.server.log, { routerId: r.routerId, routerName: r.name, reason: f.reason, code: f.code, cause: f.cause, ...f.who });
}

/** The SDK's OIDC access token, when the router sent one (apiSessionToken): valid, and the session's identity's. */
export async function checkAccessToken(r: CtrlRouter, token: string | undefined, identityId: string) {
  await accessTokenOf(r.ctx, token, identityId).catch((e: Error) => {
    throw new Refused(e.message, EdgeError.InvalidApiSession);
  });
}

export async function storeTerminator(r: CtrlRouter, id: string, address: string, req: Record<string, unknown>) {
  const s = await checkServiceSession(r.ctx, String(req.sessionToken ?? ''), 'Bind', (req.fingerprints as string[]).map((f) => f.toLowerCase()), r.routerId, undefined, r.hello.v2);
  await checkAccessToken(r, req.apiSessionToken as string | undefined, s.identityId);
  if (Number(req.cost ?? 0) > 0xffff) throw new Refused(`invalid cost ${String(req.cost)}: a terminator's cost is 0 to 65535`, EdgeError.Internal);
  await r.network.addTerminator({
    id,
    address,
    routerId: r.routerId,
    serviceId: s.serviceId,
    hostId: s.identityId,
    instanceId: String(req.instanceId ?? ''),
    cost: Number(req.cost ?? 0),
    precedence: PRECEDENCE[Number(req.precedence ?? 0)] ?? 'default',
    sessionId: s.id,
    apiSessionId: s.apiSessionId,
    token: String(req.sessionToken),
    peerData: new Map(Object.entries((req.peerData ?? {}) as Record<string, Buffer>).map(([k, v]) => [Number(k), v])),
    dials: 0,
  });
}

/** Both forms: the Dial session's checks, then the network routes it (across routers when it must). */
export async function routeCircuit(r: CtrlRouter, q: { token: string; fingerprints: string[]; instanceId?: string; peerData: Map<number, Buffer>; apiSessionToken?: string; circuitId?: string }) {
  // A 2.x router's Connect may name the service by id instead of a service session (OIDC sessions):
  // the API session's Dial session of that service stands for it.
  const byServiceId = r.hello.v2 ? await sessionTokenForServiceId(r.ctx, q.token, q.apiSessionToken, 'Dial').catch((e: Error) => {
    throw new Refused(`invalid session: ${e.message}`, EdgeError.InvalidSession);
  }) : null;
  if (byServiceId) q.token = byServiceId;
  // A 2.x router judges a JWT session's posture itself (from what the SDK sends it).
  const s = await checkServiceSession(r.ctx, q.token, 'Dial', q.fingerprints.map((f) => f.toLowerCase()), r.routerId, undefined, r.hello.v2);
  await checkAccessToken(r, q.apiSessionToken, s.identityId);
  if (s.encryptionRequired && !q.peerData.has(PUBLIC_KEY)) throw new Refused('encryption required on service, initiator did not send public header', EdgeError.EncryptionDataMissing, undefined, { serviceId: s.serviceId, serviceName: s.serviceName, identityId: s.identityId, identityName: s.identityName });
  // The caller the host is told is the identity the session belongs to, never what the dialer claims.
  q.peerData.set(Header.CallerId, Buffer.from(s.identityName, 'utf8'));
  return r.network.createCircuit(r, { serviceId: s.serviceId, serviceName: s.serviceName, clientId: s.identityId, clientName: s.identityName, sessionId: s.id, apiSessionId: s.apiSessionId, token: q.token, instanceId: q.instanceId, encryptionRequired: s.encryptionRequired, peerData: q.peerData, circuitId: q.circuitId });
}

/** What a circuit request sent in headers carries (CreateCircuitV2, and V3 beside its identity, service and circuit ids). */
export function circuitRequestOf(m: Message) {
  return {
    fingerprints: decodeStrings(m.headers.get(CtrlHeader.CircuitFingerprints)),
    instanceId: m.headers.get(CtrlHeader.CircuitTerminatorInstanceId)?.toString('utf8') || undefined,
    peerData: decodeBytesMap(m.headers.get(CtrlHeader.CircuitPeerData)),
    apiSessionToken: m.headers.get(CtrlHeader.CircuitApiSessionToken)?.toString('utf8') || undefined,
  };
}

/** The answer to a routed CreateCircuitV2 or V3 (the same headers): circuit id, ingress address, the host's peer data, tags. */
export function answerCircuit(r: CtrlRouter, m: Message, type: number, routed: RoutedCircuit) {
  r.channel.reply(
    m,
    message(type, [
      [CtrlHeader.ResponseCircuitId, str(routed.circuit.id)],
      [CtrlHeader.ResponseAddress, str(routed.circuit.ingressId)],
      [CtrlHeader.ResponsePeerData, encodeBytesMap(routed.peerData)],
      [CtrlHeader.ResponseTags, encodeStringMap(routed.tags)],
    ]),
  );
}

export async function adopt(r: CtrlRouter, certs: RouterCerts) {
  await adoptRouterCerts(r.ctx, r.routerId, r.fingerprint, certs, 'extend.router.enrollment');
  r.fingerprint = certs.client.fingerprint;
  r.server.log.info({ router: r.name, fingerprint: certs.client.fingerprint }, 'ctrl: the router renewed its certificates');
}
