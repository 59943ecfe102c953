// What the data plane (src/fabric) asks of the model: who an edge channel's API session is, which of the
// channels' sessions still exist, and the routers' own records (the service session a Dial or Bind
// presents, with what the policies say of it, is one statement of its own: dial-check.ts). Plain queries
// over the same tables the APIs use, so several controllers sharing one database agree.
import { isSet } from '../store/json.js';
import { all, first, precompile } from '../store/precompiled.js';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { hashSecret } from './ids.js';
import { checkAccessToken } from './auth/oidc/bearer.js';
import { looksLikeJwt } from './auth/oidc/tokens.js';
import { canUse, sharedEdgeRouters } from './policy/access.js';

const timeoutMs = (ctx: Ctx) => ctx.config.sessionTimeoutMinutes * 60_000;

export interface EdgeApiSession {
  id: string;
  identityId: string;
  identityName: string;
  /** SHA-1 (lowercase hex) of every certificate that may speak for this API session. */
  fingerprints: Set<string>;
}

/** Certificate fingerprints of an API session: its identity's certificate authenticators and its session certificates. */
// Compiled once: each dial through an upstream router whose session belongs to another API session than
// the channel's asks for these (built afresh, they were 7% of the controller's CPU for such dials).
const authenticatorFingerprints = precompile<{ fingerprint: string }>((db, p) => db.selectFrom('authenticators').select('fingerprint').where('identityId', '=', p(0)).where('fingerprint', 'is not', null) as never);
const sessionCertFingerprints = precompile<{ fingerprint: string }>((db, p) => db.selectFrom('apiSessionCertificates').select('fingerprint').where('apiSessionId', '=', p(0)) as never);

export async function apiSessionFingerprints(ctx: Ctx, apiSessionId: string, identityId: string): Promise<Set<string>> {
  const db = ctx.store.db;
  const [auth, certs] = await Promise.all([all(db, authenticatorFingerprints, [identityId]), all(db, sessionCertFingerprints, [apiSessionId])]);
  return new Set([...auth, ...certs].map((r) => String(r.fingerprint).toLowerCase()));
}

interface LiveRow {
  id: string;
  identityId: string;
  identityName: string;
  lastActivityAt: string;
  isMfaRequired: number;
  isMfaComplete: number;
  disabled: number;
  disabledUntil: string | null;
  expiresAt: string | null;
  extJwtPending: string | null;
}

/** A live API session: not idle past its timeout (a JWT API session: not past its expiresAt), MFA done when required, its identity not disabled. */
function live(ctx: Ctx, r: LiveRow, now = ctx.clock.now().getTime()): boolean {
  if (r.expiresAt ? Date.parse(r.expiresAt) <= now : now - Date.parse(r.lastActivityAt) > timeoutMs(ctx)) return false;
  if (isSet(r.isMfaRequired) && !isSet(r.isMfaComplete)) return false;
  // Still owing the second-factor JWT of its auth policy: partial, as one owing its TOTP code.
  if (r.extJwtPending) return false;
  if (isSet(r.disabled) && (!r.disabledUntil || Date.parse(r.disabledUntil) > now)) return false;
  return true;
}

const apiSessions = (ctx: Ctx) =>
  ctx.store.db
    .selectFrom('apiSessions as s')
    .innerJoin('identities as i', 'i.id', 's.identityId')
    .select(['s.id', 's.identityId', 'i.name as identityName', 's.lastActivityAt', 's.isMfaRequired', 's.isMfaComplete', 'i.disabled', 'i.disabledUntil', 's.expiresAt', 's.extJwtPending']);
const apiSessionById = precompile<LiveRow>((db, p) =>
  db
    .selectFrom('apiSessions as s')
    .innerJoin('identities as i', 'i.id', 's.identityId')
    .select(['s.id', 's.identityId', 'i.name as identityName', 's.lastActivityAt', 's.isMfaRequired', 's.isMfaComplete', 'i.disabled', 'i.disabledUntil', 's.expiresAt', 's.extJwtPending'])
    .where('s.id', '=', p(0)) as never,
);

/** The API session an SDK's hello names (header 1002), or null when it is unknown or no longer live. */
export async function apiSessionForEdge(ctx: Ctx, token: string): Promise<EdgeApiSession | null> {
  // An OIDC access token (a JWT API session): verified and checked against revocations, then its session by id.
  let byId: string | undefined;
  if (looksLikeJwt(token)) {
    const claims = await checkAccessToken(ctx, token).catch(() => undefined);
    if (!claims) return null;
    byId = claims.z_asid;
  }
  const q = apiSessions(ctx);
  const row = (await (byId ? q.where('s.id', '=', byId) : q.where('s.tokenHash', '=', hashSecret(token))).executeTakeFirst()) as LiveRow | undefined;
  if (!row || !live(ctx, row)) return null;
  return { id: row.id, identityId: row.identityId, identityName: row.identityName, fingerprints: await apiSessionFingerprints(ctx, row.id, row.identityId) };
}

export interface EdgeSession {
  id: string;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  serviceName: string;
  /** The session's identity by name: what a host is told as the caller of a dial (header 1008). */
  identityName: string;
  type: string;
  encryptionRequired: boolean;
  /** Its API session is a JWT one (an OIDC login). */
  jwt: boolean;
}

/**
 * What a 2.x router's CreateCircuitV2 or CreateTerminatorV2 says of the SDK's API session (its
 * apiSessionToken): an OIDC access token must be valid, not revoked, and the service session's
 * identity's (upstream checks sub against the session's identity, GHSA-7868-235p-7497 for the V3 form).
 * A legacy token, or none, says nothing more than the session's fingerprint check. Returns the claims'
 * API session id, or undefined for a token that is not a JWT; throws a message otherwise.
 */
export async function accessTokenOf(ctx: Ctx, apiSessionToken: string | undefined, identityId?: string): Promise<{ apiSessionId: string; identityId: string } | undefined> {
  if (!apiSessionToken || !looksLikeJwt(apiSessionToken)) return undefined;
  const claims = await checkAccessToken(ctx, apiSessionToken).catch((e: Error) => {
    throw new Error(`invalid api session: the access token is not accepted: ${e.message}`);
  });
  if (identityId !== undefined && claims.sub !== identityId) throw new Error('invalid api session: the access token and the service session are not the same identity\'s');
  return { apiSessionId: String(claims.z_asid), identityId: String(claims.sub) };
}

/**
 * A Dial that names its service by id instead of a service session (a 2.x router's Connect with a
 * non-JWT token: router/state/manager.go GetServiceSessionToken): the OIDC API session's Dial session
 * of that service, its latest one, or a new one made as POST /sessions makes it (policies and posture
 * checked). Null when the token is not such a dial (no OIDC access token, or no such service).
 */
export async function sessionTokenForServiceId(ctx: Ctx, serviceId: string, apiSessionToken: string | undefined, type: 'Dial' | 'Bind'): Promise<string | null> {
  if (!serviceId || looksLikeJwt(serviceId)) return null;
  const who = await accessTokenOf(ctx, apiSessionToken);
  if (!who) return null;
  const db = ctx.store.db;
  const service = await db.selectFrom('services').select('id').where('id', '=', serviceId).executeTakeFirst();
  if (!service) return null;
  const had = await db
    .selectFrom('sessions')
    .select('tokenSealed')
    .where('apiSessionId', '=', who.apiSessionId)
    .where('serviceId', '=', serviceId)
    .where('type', '=', type)
    .where('tokenSealed', 'is not', null)
    .orderBy('createdAt', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (had?.tokenSealed) return ctx.sealer.open(had.tokenSealed);
  const identity = await db.selectFrom('identities').select('name').where('id', '=', who.identityId).executeTakeFirst();
  if (!identity) return null;
  const { createSession } = await import('./resources/sessions.js');
  const made = await createSession(ctx, { identityId: who.identityId, identityName: identity.name, isAdmin: false, readOnlyAdmin: false, apiSessionId: who.apiSessionId, token: apiSessionToken! }, { serviceId, type });
  return String((made as { token?: unknown }).token ?? '') || null;
}

/** Why a Connect-V2 dial (2.1's CreateCircuitV3) is refused before any session is looked at; its edge error follows from the kind. */
export class ConnectV2Refusal extends Error {
  constructor(
    readonly kind: 'api-session' | 'service' | 'access',
    message: string,
    readonly who?: { identityId: string; identityName?: string; serviceId?: string; serviceName?: string },
  ) {
    super(message);
  }
}

/**
 * A 2.1 router's Connect-V2 (CreateCircuitV3: identity id, service id, the SDK's API session token, no
 * service session): the router judged the dial from its data model, the controller judges it again
 * (ctrl-channel-2.x.md section 1.5d; GHSA-7868-235p-7497). The token must be an OIDC access token of
 * this network (signature by our keys, aud, z_t "a", expiry; its JWT id, API session and identity not
 * revoked) whose `sub` is the identity the router names; a legacy token is refused (Connect-V2 is for
 * OIDC sessions only, as upstream's router also says); the service must exist and a Dial policy must
 * grant it. Then the API session's Dial session of that service, as a CreateCircuitV2 naming the service
 * by id gets it (sessionTokenForServiceId): the circuit is routed on it like any other dial, with its
 * fingerprint, edge router and posture checks.
 */
export async function connectV2Session(ctx: Ctx, apiSessionToken: string, identityId: string, serviceId: string): Promise<string> {
  if (!apiSessionToken) throw new ConnectV2Refusal('api-session', 'invalid api session: the Connect-V2 request carries no API session token');
  if (!looksLikeJwt(apiSessionToken)) throw new ConnectV2Refusal('api-session', 'invalid api session: connect-v2 requires an OIDC API session (an access token); a legacy (zt-session) API session dials with a service session');
  const who = (await accessTokenOf(ctx, apiSessionToken).catch((e: Error) => {
    throw new ConnectV2Refusal('api-session', e.message);
  }))!;
  if (who.identityId !== identityId) throw new ConnectV2Refusal('api-session', `invalid api session: the access token is not the dialing identity's (the router names '${identityId}')`);
  const db = ctx.store.db;
  const [identity, service] = await Promise.all([
    db.selectFrom('identities').select('name').where('id', '=', identityId).executeTakeFirst(),
    serviceId ? db.selectFrom('services').select(['id', 'name']).where('id', '=', serviceId).executeTakeFirst() : undefined,
  ]);
  if (!identity) throw new ConnectV2Refusal('api-session', 'invalid api session: its identity no longer exists');
  if (!service) throw new ConnectV2Refusal('service', `invalid service: no service has the id '${serviceId}'`, { identityId, identityName: identity.name, serviceId });
  const named = { identityId, identityName: identity.name, serviceId, serviceName: service.name };
  if (!(await canUse(db, identityId, serviceId, ['dial']))) throw new ConnectV2Refusal('access', `invalid service: no service policy grants '${identity.name}' Dial on '${service.name}'`, named);
  const token = await sessionTokenForServiceId(ctx, serviceId, apiSessionToken, 'Dial').catch((e: Error) => {
    throw new ConnectV2Refusal('access', `invalid session: ${e.message}`, named);
  });
  if (!token) throw new ConnectV2Refusal('access', `invalid session: no Dial session of '${service.name}' could be made`, named);
  return token;
}

/** The API session behind a service session, when it is still live, with its fingerprints. */
export async function liveApiSession(ctx: Ctx, apiSessionId: string): Promise<EdgeApiSession | null> {
  const row = await first(ctx.store.db, apiSessionById, [apiSessionId]);
  if (!row || !live(ctx, row)) return null;
  return { id: row.id, identityId: row.identityId, identityName: row.identityName, fingerprints: await apiSessionFingerprints(ctx, row.id, row.identityId) };
}

/**
 * Of the given API sessions and service sessions, those that still exist and are live. The data plane
 * asks this about everything it carries, every second, so an API session ended on any controller
 * (logout, expiry, deletion, a disabled or deleted identity) ends its connections here too.
 */
export async function stillLive(ctx: Ctx, apiSessionIds: string[], sessionIds: string[]): Promise<{ apiSessions: Set<string>; sessions: Set<string> }> {
  const out = { apiSessions: new Set<string>(), sessions: new Set<string>() };
  const now = ctx.clock.now().getTime();
  for (let i = 0; i < apiSessionIds.length; i += 500) {
    const rows = (await apiSessions(ctx).where('s.id', 'in', apiSessionIds.slice(i, i + 500)).execute()) as LiveRow[];
    for (const r of rows) if (live(ctx, r, now)) out.apiSessions.add(r.id);
  }
  for (let i = 0; i < sessionIds.length; i += 500) {
    const rows = await ctx.store.db.selectFrom('sessions').select('id').where('id', 'in', sessionIds.slice(i, i + 500)).execute();
    for (const r of rows) out.sessions.add(r.id);
  }
  return out;
}

export interface SessionUse {
  sessionId: string;
  routerId: string;
}

export interface LostUse {
  id: string;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  type: string;
  /** Whether the session may still use some router (else its access is gone entirely). */
  anyRouter: boolean;
}

/**
 * Of these uses of service sessions on routers, those whose identity and service may no longer use that
 * router (an edge router policy or a service edge router policy changed), keyed `session|router`, each
 * with whether the session may still use any router at all (when not, its access is gone entirely).
 * Sessions already deleted are not in the answer: the liveness check ends those.
 */
export async function routerAccessLost(ctx: Ctx, uses: SessionUse[]): Promise<Map<string, LostUse>> {
  const out = new Map<string, LostUse>();
  if (!uses.length) return out;
  const db = ctx.store.db;
  const sessions = new Map<string, Omit<LostUse, 'anyRouter'>>();
  const ids = [...new Set(uses.map((u) => u.sessionId))];
  for (let i = 0; i < ids.length; i += 500) {
    for (const r of await db.selectFrom('sessions').select(['id', 'apiSessionId', 'identityId', 'serviceId', 'type']).where('id', 'in', ids.slice(i, i + 500)).execute()) sessions.set(r.id, r);
  }
  if (!sessions.size) return out;
  const routers = [...new Set(uses.map((u) => u.routerId))];
  const pairs = async (side: 'identity' | 'service', kind: 'erp' | 'serp', entities: string[]) => {
    const rows = await db
      .selectFrom('policyMembers as f')
      .innerJoin('policyMembers as t', (j) => j.onRef('t.policyId', '=', 'f.policyId').on('t.side', '=', 'edge-router'))
      .select(['f.entityId as a', 't.entityId as r'])
      .where('f.side', '=', side)
      .where('f.kind', '=', kind)
      .where('f.entityId', 'in', entities)
      .where('t.entityId', 'in', routers)
      .execute();
    return new Set(rows.map((x) => `${x.a}|${x.r}`));
  };
  const all = [...sessions.values()];
  const [byIdentity, byService] = await Promise.all([pairs('identity', 'erp', [...new Set(all.map((s) => s.identityId))]), pairs('service', 'serp', [...new Set(all.map((s) => s.serviceId))])]);
  for (const u of uses) {
    const s = sessions.get(u.sessionId);
    if (!s || (byIdentity.has(`${s.identityId}|${u.routerId}`) && byService.has(`${s.serviceId}|${u.routerId}`))) continue;
    const anyRouter = !!(await sharedEdgeRouters(db, s.identityId, s.serviceId).executeTakeFirst());
    out.set(`${u.sessionId}|${u.routerId}`, { ...s, anyRouter });
  }
  return out;
}

/** The ids of every API session routers can be told of (sealed token): cheap, for finding what a sync missed. */
export async function sealedApiSessionIds(ctx: Ctx): Promise<string[]> {
  return (await ctx.store.db.selectFrom('apiSessions').select('id').where('tokenSealed', 'is not', null).execute()).map((r) => r.id);
}

/** Refresh the API sessions that carry live edge connections, as upstream's routers' API-session heartbeats do. */
export async function touchApiSessions(ctx: Ctx, ids: string[]) {
  if (!ids.length) return;
  await ctx.store.db.updateTable('apiSessions').set({ lastActivityAt: iso(ctx.clock.now()) }).where('id', 'in', ids).execute();
}

/** Keep a router online until `until` (null: offline now), and clear leases that lapsed (a controller that died). */
export async function setRouterLease(ctx: Ctx, routerId: string, until: Date | null) {
  await ctx.store.db.updateTable('routers').set({ onlineUntil: until ? until.toISOString() : null }).where('id', '=', routerId).execute();
  await ctx.store.db.updateTable('routers').set({ onlineUntil: null }).where('onlineUntil', '<', new Date().toISOString()).execute();
}

/**
 * A router connected to several controllers on one database (each in its ctrl.endpoints) is online while
 * any of them holds it. The one it leaves ends the lease only if the lease is still the one it wrote
 * (`held`): another controller that renewed it since keeps it; one that renewed it earlier claims it
 * back (claimRouterLeases) within its next second.
 */
export async function releaseRouterLease(ctx: Ctx, routerId: string, held: string) {
  await ctx.store.db.updateTable('routers').set({ onlineUntil: null }).where('id', '=', routerId).where('onlineUntil', '=', held).execute();
}

/** Leases of these routers that another controller ended or let lapse are taken (`until`); returns the ids taken. */
export async function claimRouterLeases(ctx: Ctx, routerIds: string[], until: string): Promise<string[]> {
  if (!routerIds.length) return [];
  const now = new Date().toISOString();
  const rows = await ctx.store.db
    .updateTable('routers')
    .set({ onlineUntil: until })
    .where('id', 'in', routerIds)
    .where((eb) => eb.or([eb('onlineUntil', 'is', null), eb('onlineUntil', '<', now)]))
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

export interface HostedTerminator {
  id: string;
  /** `edge` (an SDK's Bind; the default) or `tunnel` (an upstream router's own tunneler). */
  binding?: 'edge' | 'tunnel';
  serviceId: string;
  routerId: string;
  hostId: string;
  instanceId: string;
  cost: number;
  precedence: 'default' | 'required' | 'failed';
  /** An upstream router's: its Bind session and the peer data the router sent, kept for after a restart. */
  sessionId?: string;
  peerData?: Map<number, Buffer>;
}

const peerDataJson = (m?: Map<number, Buffer>) => (m ? JSON.stringify(Object.fromEntries([...m].map(([k, v]) => [k, v.toString('base64')]))) : null);

/** Record a terminator an SDK's Bind made (visible in /terminators with its router and host). */
export async function addTerminator(ctx: Ctx, t: HostedTerminator, o: { replace?: boolean } = {}) {
  const now = iso(ctx.clock.now());
  const row = { id: t.id, createdAt: now, updatedAt: now, tags: '{}', serviceId: t.serviceId, routerId: t.routerId, binding: t.binding ?? 'edge', address: t.id, identity: t.instanceId, identitySecret: null, cost: t.cost, precedence: t.precedence, hostId: t.hostId, sessionId: t.sessionId ?? null, peerData: peerDataJson(t.peerData) };
  if (!o.replace) return void (await ctx.store.db.insertInto('terminators').values(row).execute());
  // A router that reconnects sends its terminators again under the same ids: the old row and the new are
  // one write, so a controller reading on another connection never finds the terminator missing between.
  await ctx.store.write(async (tx) => {
    await tx.deleteFrom('terminators').where('id', '=', t.id).execute();
    await tx.insertInto('terminators').values(row).execute();
  });
}

/** An SDK's terminator on an upstream router as the store kept it, with its Bind session (null: ended). */
export interface StoredRouterTerminator {
  id: string;
  serviceId: string;
  routerId: string;
  /** `edge` unless read with anyBinding. */
  binding: string;
  routerName: string;
  /** Set when the router is a controller's embedded router: that controller's id. */
  embeddedOf: string | null;
  hostId: string;
  instanceId: string;
  cost: number;
  precedence: 'default' | 'required' | 'failed';
  peerData: Map<number, Buffer>;
  session: { id: string; apiSessionId: string; token: string } | null;
}

/**
 * The edge terminators stored for an upstream router (a previous run of the controller, or another
 * controller, held them): what routes to them, with the Bind session's token opened.
 */
export async function storedRouterTerminators(ctx: Ctx, routerId: string): Promise<StoredRouterTerminator[]> {
  // Those its SDKs made and those its own tunneler made (binding tunnel): the router holds both.
  return (await storedEdgeTerminators(ctx, { routerId, anyBinding: true })).filter((r) => r.binding === 'edge' || r.binding === 'tunnel');
}

/**
 * The same for a service's SDK terminators, or some by id (on any router): with several controllers on
 * one database, a router connected to each makes, changes and removes its terminators through any of them.
 * `anyBinding`: every terminator that matches, whatever its binding (what is still there at all).
 */
export async function storedEdgeTerminators(ctx: Ctx, where: { routerId?: string; serviceId?: string; ids?: string[]; anyBinding?: boolean }): Promise<StoredRouterTerminator[]> {
  let q = ctx.store.db
    .selectFrom('terminators as t')
    .leftJoin('sessions as s', 's.id', 't.sessionId')
    .leftJoin('routers as r', 'r.id', 't.routerId')
    .select(['t.id', 't.serviceId', 't.routerId', 'r.name as routerName', 'r.controllerId as embeddedOf', 't.binding', 't.hostId', 't.identity', 't.cost', 't.precedence', 't.peerData', 't.sessionId', 's.id as liveSession', 's.apiSessionId', 's.tokenSealed']);
  if (!where.anyBinding) q = q.where('t.binding', '=', 'edge');
  if (where.routerId) q = q.where('t.routerId', '=', where.routerId);
  if (where.serviceId) q = q.where('t.serviceId', '=', where.serviceId);
  if (where.ids) q = q.where('t.id', 'in', where.ids.length ? where.ids : ['']);
  const rows = await q.execute();
  return rows.map((r) => {
    let token = '';
    try {
      token = r.tokenSealed ? ctx.sealer.open(r.tokenSealed) : '';
    } catch {
      token = '';
    }
    const peerData = new Map<number, Buffer>(Object.entries(JSON.parse(r.peerData ?? '{}') as Record<string, string>).map(([k, v]) => [Number(k), Buffer.from(v, 'base64')]));
    return {
      id: r.id,
      serviceId: r.serviceId,
      routerId: r.routerId,
      binding: r.binding,
      routerName: r.routerName ?? r.routerId,
      embeddedOf: r.embeddedOf ?? null,
      hostId: r.hostId ?? '',
      instanceId: r.identity ?? '',
      cost: Number(r.cost),
      precedence: r.precedence as StoredRouterTerminator['precedence'],
      peerData,
      session: r.liveSession && r.apiSessionId && token ? { id: r.liveSession, apiSessionId: r.apiSessionId, token } : null,
    };
  });
}

export async function updateTerminator(ctx: Ctx, id: string, o: { cost?: number; precedence?: string }) {
  await ctx.store.db.updateTable('terminators').set({ ...o, updatedAt: iso(ctx.clock.now()) }).where('id', '=', id).execute();
}

export async function removeTerminators(ctx: Ctx, ids: string[]) {
  for (let i = 0; i < ids.length; i += 500) await ctx.store.db.deleteFrom('terminators').where('id', 'in', ids.slice(i, i + 500)).execute();
}

/**
 * A terminator an administrator made (any binding but an SDK's `edge` and a router tunneler's `tunnel`,
 * which their routers hold): the router dials its address.
 */
export interface RouterSideTerminator {
  id: string;
  serviceId: string;
  routerId: string;
  binding: string;
  address: string;
  instanceId: string;
  cost: number;
  precedence: 'default' | 'required' | 'failed';
}

/** Every router-side terminator (made through the API or the CLI: `ziti edge create terminator`). */
export async function routerSideTerminators(ctx: Ctx): Promise<RouterSideTerminator[]> {
  const rows = await ctx.store.db.selectFrom('terminators').select(['id', 'serviceId', 'routerId', 'binding', 'address', 'identity', 'cost', 'precedence']).where('binding', 'not in', ['edge', 'tunnel']).execute();
  return rows.map((r) => ({ id: r.id, serviceId: r.serviceId, routerId: r.routerId, binding: r.binding, address: r.address, instanceId: r.identity ?? '', cost: Number(r.cost), precedence: r.precedence as RouterSideTerminator['precedence'] }));
}

/** At start: the edge terminators a previous run of this router left (its process died with its hosts gone). */
export async function removeRouterEdgeTerminators(ctx: Ctx, routerId: string): Promise<number> {
  const r = await ctx.store.db.deleteFrom('terminators').where('routerId', '=', routerId).where('binding', '=', 'edge').executeTakeFirst();
  return Number(r.numDeletedRows);
}


export interface CtrlRouter {
  id: string;
  name: string;
  fingerprint: string | null;
  disabled: boolean;
  isVerified: boolean;
}

/** A router as the control channel knows it: by the id its hello names. */
export async function routerForCtrl(ctx: Ctx, routerId: string): Promise<CtrlRouter | null> {
  const r = await ctx.store.db.selectFrom('routers').select(['id', 'name', 'fingerprint', 'disabled', 'isVerified']).where('id', '=', routerId).executeTakeFirst();
  return r ? { id: r.id, name: r.name, fingerprint: r.fingerprint, disabled: isSet(r.disabled), isVerified: isSet(r.isVerified) } : null;
}

/** The addresses an upstream router reports for its edge listeners: what SDKs are given. */
export async function setRouterProtocols(ctx: Ctx, routerId: string, protocols: Record<string, string>, hostname: string) {
  await ctx.store.db.updateTable('routers').set({ supportedProtocols: JSON.stringify(protocols), hostname, updatedAt: iso(ctx.clock.now()) }).where('id', '=', routerId).execute();
}

export interface SyncedApiSession {
  id: string;
  token: string;
  certFingerprints: string[];
  /** Its identity (2.x routers are told it; 1.x routers skip the field). */
  identityId: string;
}

/**
 * Live API sessions for routers, with their tokens (opened from the sealed copy) and certificate
 * fingerprints: all of them, or those made after `after` (ISO time). Sessions made before tokens were
 * sealed cannot be told to routers: their SDKs log in again.
 */
export async function apiSessionsForRouters(ctx: Ctx, after?: string, ids?: string[]): Promise<{ sessions: SyncedApiSession[]; newest: string }> {
  if (ids && ids.length > 500) {
    // In pages, for the IN list; newest is not asked for by id.
    const out: SyncedApiSession[] = [];
    for (let i = 0; i < ids.length; i += 500) out.push(...(await apiSessionsForRouters(ctx, undefined, ids.slice(i, i + 500))).sessions);
    return { sessions: out, newest: '' };
  }
  let q = ctx.store.db
    .selectFrom('apiSessions as s')
    .innerJoin('identities as i', 'i.id', 's.identityId')
    .select(['s.id', 's.identityId', 'i.name as identityName', 's.lastActivityAt', 's.isMfaRequired', 's.isMfaComplete', 'i.disabled', 'i.disabledUntil', 's.expiresAt', 's.extJwtPending', 's.tokenSealed', 's.createdAt'])
    .where('s.tokenSealed', 'is not', null);
  if (after) q = q.where('s.createdAt', '>', after);
  if (ids) q = q.where('s.id', 'in', ids.length ? ids : ['']);
  const rows = (await q.orderBy('s.createdAt').execute()) as (LiveRow & { tokenSealed: string; createdAt: string })[];
  const now = ctx.clock.now().getTime();
  const alive = rows.filter((r) => live(ctx, r, now));
  const fingerprints = new Map<string, string[]>();
  const identities = [...new Set(alive.map((r) => r.identityId))];
  for (let i = 0; i < identities.length; i += 500) {
    const auth = await ctx.store.db.selectFrom('authenticators').select(['identityId', 'fingerprint']).where('identityId', 'in', identities.slice(i, i + 500)).where('fingerprint', 'is not', null).execute();
    for (const a of auth) fingerprints.set(a.identityId, [...(fingerprints.get(a.identityId) ?? []), String(a.fingerprint).toLowerCase()]);
  }
  const aliveIds = alive.map((r) => r.id);
  const sessionCerts = new Map<string, string[]>();
  for (let i = 0; i < aliveIds.length; i += 500) {
    const certs = await ctx.store.db.selectFrom('apiSessionCertificates').select(['apiSessionId', 'fingerprint']).where('apiSessionId', 'in', aliveIds.slice(i, i + 500)).execute();
    for (const c of certs) sessionCerts.set(c.apiSessionId, [...(sessionCerts.get(c.apiSessionId) ?? []), c.fingerprint.toLowerCase()]);
  }
  return {
    sessions: alive.map((r) => ({ id: r.id, token: ctx.sealer.open(r.tokenSealed), certFingerprints: [...(fingerprints.get(r.identityId) ?? []), ...(sessionCerts.get(r.id) ?? [])], identityId: r.identityId })),
    newest: rows.at(-1)?.createdAt ?? after ?? '',
  };
}
