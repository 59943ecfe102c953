// What several tunneler handlers share: the API session as a 1.x router is told it, the precedence enum,
// a dial refused or failed (told to the router, logged and counted as every failed dial is), and the
// terminator a tunneler creates (checked, stored and routed as an SDK's, with binding `tunnel`).
import { message, str, u32, type Message } from '../../channel/codec.js';
import { Header } from '../../channel/messages.js';
import { failureOf, reportDialFailure } from '../../dial-failures.js';
import { Refused } from '../../session-checks.js';
import type { Precedence } from '../../terminators.js';
import { checkTunnelerAccess, TunnelerRefused, tunnelerSession, type TunnelerApiSession, type TunnelerIdentity } from '../../../model/router-tunneler.js';
import { CtrlHeader, CtrlType } from '../messages.js';
import type { RoutedCircuit } from '../network.js';
import type { RouterTunneler } from './state.js';

export const PRECEDENCES: Precedence[] = ['default', 'required', 'failed'];
const PUBLIC_KEY = 1003;
const MAX_COST = 0xffff;

/** CreateApiSessionResponse: the session, how often to refresh it, and the identity's hosting defaults. */
export function apiSessionResponse(t: RouterTunneler, identity: TunnelerIdentity, s: TunnelerApiSession) {
  const precedence = (p: string) => Math.max(0, PRECEDENCES.indexOf(p as Precedence));
  return {
    sessionId: s.id,
    token: s.token,
    refreshIntervalSeconds: Math.max(10, t.ctx.config.sessionTimeoutMinutes * 60 - 10),
    identityId: identity.id,
    identityName: identity.name,
    defaultHostingPrecedence: precedence(identity.defaultHostingPrecedence),
    defaultHostingCost: identity.defaultHostingCost,
    appDataJson: Object.keys(identity.appData).length ? JSON.stringify(identity.appData) : '',
    servicePrecedences: Object.fromEntries(Object.entries(identity.serviceHostingPrecedences).map(([k, v]) => [k, precedence(v)])),
    serviceCosts: identity.serviceHostingCosts,
  };
}

/** A refusal of the model's as the data plane's (its edge error code and the cause it is counted under). */
export function asRefused(e: unknown, who?: { serviceId: string; serviceName: string; identityId: string; identityName: string }): unknown {
  if (e instanceof TunnelerRefused) return new Refused(e.message, e.code, e.cause, who);
  if (e instanceof Refused && who && !e.who) e.who = who;
  return e;
}

/** An edge Error (20002) answering `to`: the reason as its body, header 1014 the edge error code. */
export function answerError(t: RouterTunneler, to: Message, reason: string, code: number) {
  t.conn.channel.reply(to, message(CtrlType.Error, [[CtrlHeader.EdgeErrorCode, u32(code)]], str(reason)));
}

/**
 * A refused terminator of a 1.x router's tunneler: said in the log only, as upstream does (the router waits
 * for no answer and tries again, every 5 s growing to 5 min; an Error it would drop with a warning each time).
 */
export function terminatorRefused(t: RouterTunneler, e: unknown, service?: string) {
  const f = failureOf(asRefused(e));
  t.log.info({ router: t.conn.name, service, reason: f.reason }, 'ctrl: refused a terminator of the router\'s tunneler');
}

/** A dial of the router's tunneler that failed: the router is told why; it is logged and counted as any failed dial. */
export function dialFailed(t: RouterTunneler, to: Message, e: unknown, who?: { serviceId: string; serviceName: string; identityId: string; identityName: string }) {
  const f = failureOf(asRefused(e, who));
  answerError(t, to, f.reason, f.code);
  reportDialFailure(t.ctx, t.log, { routerId: t.conn.routerId, routerName: t.conn.name, reason: f.reason, code: f.code, cause: f.cause, ...(f.who ?? who ?? {}) });
}

export interface TerminatorAsk {
  address: string;
  service: { id: string; name: string };
  cost: number;
  precedence: number;
  instanceId: string;
  peerData: Record<string, Buffer>;
}

/**
 * The tunneler's terminator: its identity may Bind the service on this router (service policy, edge router
 * policy, service edge router policy, each named when missing), under a Bind session the controller keeps
 * for it; an id another terminator has (another router, service or binding) is refused. Stored and routed
 * as an SDK's, with binding `tunnel`: the egress router's tunneler dials the hosted address.
 */
export async function storeTunnelTerminator(t: RouterTunneler, identity: TunnelerIdentity, apiSession: TunnelerApiSession, ask: TerminatorAsk): Promise<{ id: string }> {
  if (!ask.address) throw new Refused('invalid terminator: the request has no terminator id (address)', 8, 'INVALID_TERMINATOR');
  await checkTunnelerAccess(t.ctx, identity, ask.service, t.conn.routerId, t.conn.name, 'bind');
  if (ask.cost > MAX_COST) throw new Refused(`invalid cost ${ask.cost}: a terminator's cost is 0 to ${MAX_COST}`, 10, 'INVALID_COST');
  const network = t.conn.server.network;
  const had = network.terminators.get(ask.address);
  if (had && (had.binding !== 'tunnel' || had.routerId !== t.conn.routerId || had.serviceId !== ask.service.id || had.hostId !== identity.id)) {
    throw new Refused(`selected id conflicts with terminator '${ask.address}' of another binding, service, router or identity`, 1, 'INTERNAL');
  }
  const session = await tunnelerSession(t.ctx, identity, apiSession, ask.service.id, 'Bind');
  await network.addTerminator({
    id: ask.address,
    binding: 'tunnel',
    address: ask.address,
    routerId: t.conn.routerId,
    serviceId: ask.service.id,
    hostId: identity.id,
    instanceId: ask.instanceId,
    cost: ask.cost,
    precedence: PRECEDENCES[ask.precedence] ?? 'default',
    sessionId: session.id,
    apiSessionId: apiSession.id,
    // What the router is told as the session's token, and what its removal names (SessionRemoved): the id.
    token: session.id,
    peerData: new Map(Object.entries(ask.peerData).map(([k, v]) => [Number(k), v])),
    dials: 0,
  });
  t.log.info({ router: t.conn.name, service: ask.service.name, terminator: ask.address }, 'ctrl: the router\'s tunneler hosts a service');
  return session;
}

/**
 * A circuit for a connection the router's tunneler intercepted: its identity may Dial the service on this
 * router, under a Dial session the controller keeps for it; then routed as an SDK's dial from this router.
 */
export async function tunnelCircuit(t: RouterTunneler, identity: TunnelerIdentity, apiSession: TunnelerApiSession, service: { id: string; name: string; encryptionRequired: boolean }, instanceId: string, peerDataIn: Record<string, Buffer>): Promise<RoutedCircuit & { sessionId: string }> {
  const who = { serviceId: service.id, serviceName: service.name, identityId: identity.id, identityName: identity.name };
  try {
    await checkTunnelerAccess(t.ctx, identity, service, t.conn.routerId, t.conn.name, 'dial');
    const session = await tunnelerSession(t.ctx, identity, apiSession, service.id, 'Dial');
    const peerData = new Map(Object.entries(peerDataIn).map(([k, v]) => [Number(k), v]));
    if (service.encryptionRequired && !peerData.has(PUBLIC_KEY)) throw new Refused('encryption required on service, initiator did not send public header', 11, 'ENCRYPTION_DATA_MISSING');
    peerData.set(Header.CallerId, Buffer.from(identity.name, 'utf8'));
    const routed = await t.conn.server.network.createCircuit(t.conn, {
      serviceId: service.id,
      serviceName: service.name,
      clientId: identity.id,
      clientName: identity.name,
      sessionId: session.id,
      apiSessionId: apiSession.id,
      token: session.id,
      instanceId: instanceId || undefined,
      encryptionRequired: service.encryptionRequired,
      peerData,
    });
    return { ...routed, sessionId: session.id };
  } catch (e) {
    throw asRefused(e, who);
  }
}
