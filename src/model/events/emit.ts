// The events of logins, API sessions, service sessions and enrollments, built in one place from what the
// routes and model functions know. Each is an emit() (a queue push): nothing here waits for I/O.
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';
import type { ApiSessionEvent, AuthenticationEvent, EnrollmentEvent, GrantedBy, Missing, PostureEvent, SessionEvent } from './types.js';

/** The method as upstream's authentication events name it (its password method is updb). */
const methodName = (m: string) => (m === 'password' ? 'updb' : m);

export function loginSucceeded(ctx: Ctx, method: string, s: { id: string; identityId: string; authenticatorId: string; ipAddress: string }) {
  authenticationSucceeded(ctx, method, s);
  apiSessionCreated(ctx, s);
}

/** A primary method succeeded (an OIDC login's API session opens later, when its code is exchanged). */
export function authenticationSucceeded(ctx: Ctx, method: string, s: { identityId: string; authenticatorId: string; ipAddress: string }) {
  ctx.events.emit(ctx.events.stamp<AuthenticationEvent>({
    namespace: 'authentication', event_type: 'success', type: methodName(method), authenticator_id: s.authenticatorId,
    identity_id: s.identityId, remote_address: s.ipAddress, success: true, reason: '',
  }));
}

/**
 * Why a login failed, as AuthenticationEvent.failure names it: what the model knew when it refused it
 * (model/auth/authenticate.ts sets `failure` on the error), or what the answer's status says.
 */
export function failureOf(err: unknown): string {
  const known = (err as { failure?: unknown } | undefined)?.failure;
  if (typeof known === 'string') return known;
  if (!(err instanceof ApiError)) return 'other';
  if (err.status === 429) return 'throttled';
  if (err.code === 'MFA_INVALID_TOKEN') return 'wrong-mfa-code';
  if (err.code === 'MFA_NOT_ENROLLED') return 'mfa-not-enrolled';
  if (err.status === 400) return 'invalid-request';
  return 'other';
}

/** A refused login: the reason is the answer's message (never the credentials); the identity when it is known. */
export function loginFailed(ctx: Ctx, method: string, err: unknown, remoteAddress: string, o: { username?: unknown; identityId?: string } = {}) {
  const reason = err instanceof ApiError ? `${err.code}: ${err.message}` : 'internal error';
  ctx.events.emit(ctx.events.stamp<AuthenticationEvent>({
    namespace: 'authentication', event_type: 'fail', type: methodName(String(method).slice(0, 32)), authenticator_id: (err as { authenticatorId?: string }).authenticatorId ?? '',
    identity_id: o.identityId ?? (err as { identityId?: string }).identityId ?? '',
    // The username only where it is the credential: a certificate or JWT login's body may carry one too
    // (a client's default), which would name another identity in the audit.
    ...(typeof o.username === 'string' && method === 'password' ? { username: o.username.slice(0, 255) } : {}),
    remote_address: remoteAddress, success: false, reason, failure: failureOf(err),
  }));
}

export function apiSessionCreated(ctx: Ctx, s: { id: string; identityId: string; ipAddress: string }, eventType: 'created' | 'refreshed' | 'exchanged' = 'created', type: ApiSessionEvent['type'] = 'legacy') {
  ctx.events.emit(ctx.events.stamp<ApiSessionEvent>({ namespace: 'edge.apiSessions', event_type: eventType, id: s.id, type, identity_id: s.identityId, ip_address: s.ipAddress }));
}

export function apiSessionEnded(ctx: Ctx, s: { id: string; identityId: string; expiresAt?: string | null }, reason: string) {
  ctx.events.emit(ctx.events.stamp<ApiSessionEvent>({ namespace: 'edge.apiSessions', event_type: 'deleted', id: s.id, type: s.expiresAt ? 'jwt' : 'legacy', identity_id: s.identityId, reason }));
}

/** `access`: the access log's fields (ztc's, edge#227): names, what granted it, what it lacks. */
export function sessionEvent(
  ctx: Ctx,
  eventType: SessionEvent['event_type'],
  s: { id: string; type: string; apiSessionId: string; identityId: string; serviceId: string },
  access?: { identityName: string; serviceName: string; grantedBy?: GrantedBy; missing?: Missing[] },
) {
  ctx.events.emit(ctx.events.stamp<SessionEvent>({
    namespace: 'edge.sessions', event_type: eventType, session_type: s.type, id: s.id, api_session_id: s.apiSessionId, identity_id: s.identityId, service_id: s.serviceId,
    ...(access ? { identity_name: access.identityName, service_name: access.serviceName } : {}),
    ...(access?.grantedBy ? { granted_by: access.grantedBy } : {}),
    ...(access?.missing?.length ? { missing: access.missing } : {}),
  }));
}

/** A session request refused: what was missing (a service policy, passing posture checks). */
export function sessionRefused(ctx: Ctx, r: { type: string; apiSessionId: string; identityId: string; identityName: string; serviceId: string; serviceName: string; missing: Missing[] }) {
  sessionEvent(ctx, 'refused', { id: '', type: r.type, apiSessionId: r.apiSessionId, identityId: r.identityId, serviceId: r.serviceId }, { identityName: r.identityName, serviceName: r.serviceName, missing: r.missing });
}

/** A session request's posture failures: refused (denied), or granted with only report-only checks failing (reported). */
export function postureEvent(
  ctx: Ctx,
  eventType: PostureEvent['event_type'],
  r: { identityId: string; apiSessionId: string; serviceId: string; serviceName: string; sessionType: string; sessionId?: string; policies: PostureEvent['policies']; checks: PostureEvent['checks'] },
) {
  ctx.events.emit(ctx.events.stamp<PostureEvent>({
    namespace: 'posture', event_type: eventType, identity_id: r.identityId, api_session_id: r.apiSessionId, service_id: r.serviceId, service_name: r.serviceName, session_type: r.sessionType,
    ...(r.sessionId ? { session_id: r.sessionId } : {}), policies: r.policies, checks: r.checks,
  }));
}

/** `whose`: the identity (or router) the token or certificate named, when the request got that far. */
export function enrollmentEvent(ctx: Ctx, method: string, ok: boolean, remoteAddress: string, reason = '', whose: { identityId?: string; routerId?: string } = {}) {
  ctx.events.emit(ctx.events.stamp<EnrollmentEvent>({
    namespace: 'enrollment', event_type: ok ? 'success' : 'fail', method, identity_id: whose.identityId ?? '', ...(whose.routerId ? { router_id: whose.routerId } : {}), remote_address: remoteAddress, reason,
  }));
}

/** The events of a session or API session deleted through the API (published with their write's commit). */
export const sessionDeleted = (ctx: Ctx, row: Record<string, unknown>): SessionEvent =>
  ctx.events.stamp<SessionEvent>({
    namespace: 'edge.sessions', event_type: 'deleted', session_type: String(row.type ?? ''), id: String(row.id), api_session_id: String(row.apiSessionId ?? ''), identity_id: String(row.identityId ?? ''), service_id: String(row.serviceId ?? ''),
  });

export const apiSessionDeleted = (ctx: Ctx, row: Record<string, unknown>, reason = 'deleted'): ApiSessionEvent =>
  ctx.events.stamp<ApiSessionEvent>({ namespace: 'edge.apiSessions', event_type: 'deleted', id: String(row.id), type: row.expiresAt ? 'jwt' : 'legacy', identity_id: String(row.identityId ?? ''), reason });
