// What an upstream router's own tunneler (its `tunnel` listener binding, "ER/T") is to the model: it acts as
// the router's identity of type Router (resources/router-identities.ts makes it with the router's system
// edge router policy), holds an API session the controller makes for it (it never logs in), and asks for
// its services, Bind and Dial sessions as any SDK would, checked against the same policies.
//
// Upstream's router finds that identity by the router's own id; here the identity has its own id, and the
// router's system policy names it (`edge-router-<router id>-system`, identityRoles `@<identity id>`).
import { fromJson, isSet } from '../store/json.js';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { createApiSession } from './auth/api-sessions.js';
import { relatedIds } from './policy/access.js';

/** How stale the tunneler's API session may get before a request touches it. */
const TOUCH_EVERY_MS = 60_000;

/** The API session's authenticator: none (the controller made it for the router's tunneler). */
export const TUNNELER_AUTHENTICATOR = 'router-tunneler';

export interface TunnelerIdentity {
  id: string;
  name: string;
  disabled: boolean;
  defaultHostingPrecedence: string;
  defaultHostingCost: number;
  serviceHostingPrecedences: Record<string, string>;
  serviceHostingCosts: Record<string, number>;
  appData: Record<string, unknown>;
}

/** Refused: the router has no tunneler identity, or its identity may not do what was asked (the text says which policy is missing). */
export class TunnelerRefused extends Error {
  constructor(
    message: string,
    /** Upstream's edge error code (edge-protocol.md section 6): 6 invalid service, 5 invalid edge router, 7 tunneling not enabled. */
    readonly code: number,
    /** What a refused dial is counted under (fabric/dial-failures.ts). */
    override readonly cause: string,
  ) {
    super(message);
  }
}

export const TUNNEL_ERROR = { InvalidEdgeRouter: 5, InvalidService: 6, TunnelingNotEnabled: 7 } as const;

/** The id of the router's tunneler identity, read from its system edge router policy; null when tunneling is off. */
export async function tunnelerIdentityId(ctx: Ctx, routerId: string): Promise<string | null> {
  const row = await ctx.store.db.selectFrom('edgeRouterPolicies').select('identityRoles').where('name', '=', `edge-router-${routerId}-system`).where('isSystem', '=', 1).executeTakeFirst();
  const ref = row ? fromJson<string[]>(row.identityRoles as string, [])[0] : undefined;
  return ref?.startsWith('@') ? ref.slice(1) : null;
}

/** Router id -> its tunneler identity's id, for every tunneler-enabled router (the router data model names the identity by the router's id). */
export async function tunnelerIdentities(ctx: Ctx): Promise<Map<string, string>> {
  const rows = await ctx.store.db.selectFrom('edgeRouterPolicies').select(['name', 'identityRoles']).where('isSystem', '=', 1).where('name', 'like', 'edge-router-%-system').execute();
  const out = new Map<string, string>();
  for (const r of rows) {
    const ref = fromJson<string[]>(r.identityRoles as string, [])[0];
    if (ref?.startsWith('@')) out.set(r.name.slice('edge-router-'.length, -'-system'.length), ref.slice(1));
  }
  return out;
}

/** The router's tunneler identity; refused (tunneling not enabled) when the router has none or it is not a Router identity. */
export async function tunnelerIdentity(ctx: Ctx, routerId: string): Promise<TunnelerIdentity> {
  const id = await tunnelerIdentityId(ctx, routerId);
  const row = id
    ? await ctx.store.db
        .selectFrom('identities')
        .select(['id', 'name', 'typeId', 'disabled', 'disabledUntil', 'defaultHostingPrecedence', 'defaultHostingCost', 'serviceHostingPrecedences', 'serviceHostingCosts', 'appData'])
        .where('id', '=', id)
        .executeTakeFirst()
    : undefined;
  if (!row || row.typeId !== 'Router') throw new TunnelerRefused('tunneling not enabled: the edge router has no tunneler identity (set isTunnelerEnabled on the edge router)', TUNNEL_ERROR.TunnelingNotEnabled, 'TUNNELING_NOT_ENABLED');
  const disabled = isSet(row.disabled) && (!row.disabledUntil || Date.parse(row.disabledUntil) > ctx.clock.now().getTime());
  return {
    id: row.id,
    name: row.name,
    disabled,
    defaultHostingPrecedence: String(row.defaultHostingPrecedence ?? 'default'),
    defaultHostingCost: Number(row.defaultHostingCost ?? 0),
    serviceHostingPrecedences: fromJson<Record<string, string>>(row.serviceHostingPrecedences as string, {}),
    serviceHostingCosts: fromJson<Record<string, number>>(row.serviceHostingCosts as string, {}),
    appData: fromJson<Record<string, unknown>>(row.appData as string, {}),
  };
}

export interface TunnelerApiSession {
  id: string;
  token: string;
  configTypes: string[];
}

/**
 * The tunneler's API session: its newest live one (made earlier by this or another controller), else a
 * new one with the config types it asked for. Touched on every use; the control channel also keeps it
 * touched while the router is connected (the idle timeout would end it, and its sessions with it).
 */
export async function tunnelerApiSession(ctx: Ctx, identity: TunnelerIdentity, configTypes: string[]): Promise<TunnelerApiSession> {
  if (identity.disabled) throw new TunnelerRefused(`tunneling not enabled: the router's identity '${identity.name}' is disabled`, TUNNEL_ERROR.TunnelingNotEnabled, 'TUNNELING_NOT_ENABLED');
  const cutoff = iso(new Date(ctx.clock.now().getTime() - ctx.config.sessionTimeoutMinutes * 60_000));
  const had = await ctx.store.db
    .selectFrom('apiSessions')
    .select(['id', 'tokenSealed', 'configTypes', 'lastActivityAt'])
    .where('identityId', '=', identity.id)
    .where('authenticatorId', '=', TUNNELER_AUTHENTICATOR)
    .where('tokenSealed', 'is not', null)
    .where('lastActivityAt', '>=', cutoff)
    .orderBy('createdAt', 'desc')
    .executeTakeFirst();
  if (had?.tokenSealed) {
    // Written once a minute at most (every intercepted connection asks): enough against any idle timeout.
    if (ctx.clock.now().getTime() - Date.parse(had.lastActivityAt) > TOUCH_EVERY_MS) await touchTunnelerApiSessions(ctx, [had.id]);
    return { id: had.id, token: ctx.sealer.open(had.tokenSealed), configTypes: fromJson<string[]>(had.configTypes as string, []) };
  }
  const types = configTypes.length ? configTypes : ['all'];
  const made = await createApiSession(ctx, { identityId: identity.id, authenticatorId: TUNNELER_AUTHENTICATOR, ipAddress: '', configTypes: types });
  return { ...made, configTypes: types };
}

export async function touchTunnelerApiSessions(ctx: Ctx, ids: string[]) {
  if (ids.length) await ctx.store.db.updateTable('apiSessions').set({ lastActivityAt: iso(ctx.clock.now()) }).where('id', 'in', ids).execute();
}

/** A service the tunneler may use, as the router's tunneler reads it (TunnelService: config and tags as JSON). */
export interface TunnelerService {
  id: string;
  name: string;
  permissions: string[];
  encryptionRequired: boolean;
  config: Record<string, unknown>;
  tags: Record<string, unknown>;
}

/** The services the tunneler identity may Dial or Bind, with the configs of the types its API session asked for. */
export async function tunnelerServices(ctx: Ctx, identityId: string, apiSessionId: string, configTypes: string[]): Promise<TunnelerService[]> {
  const db = ctx.store.db;
  const rows = (await db
    .selectFrom('services as e')
    .select(['e.id', 'e.name', 'e.encryptionRequired', 'e.tags'])
    .where('e.id', 'in', relatedIds(db, 'identity', identityId, 'service', ['dial', 'bind']))
    .orderBy('e.name')
    .execute()) as Record<string, unknown>[];
  const { expandServices } = await import('./resources/services.js');
  await expandServices(db, rows, ctx.clock.now(), { identityId, isAdmin: false, configTypes, apiSessionId });
  return rows.map((r) => ({
    id: String(r.id),
    name: String(r.name),
    permissions: (r.permissions as string[]) ?? [],
    encryptionRequired: isSet(r.encryptionRequired as number),
    config: (r.config as Record<string, unknown>) ?? {},
    tags: fromJson<Record<string, unknown>>(r.tags as string, {}),
  }));
}

export async function serviceById(ctx: Ctx, id: string) {
  const row = await ctx.store.db.selectFrom('services').select(['id', 'name', 'encryptionRequired']).where('id', '=', id).executeTakeFirst();
  if (!row) throw new TunnelerRefused(`invalid service: no service has the id '${id}'`, TUNNEL_ERROR.InvalidService, 'INVALID_SERVICE');
  return { id: row.id, name: row.name, encryptionRequired: isSet(row.encryptionRequired) };
}

export async function serviceByName(ctx: Ctx, name: string) {
  const row = await ctx.store.db.selectFrom('services').select(['id', 'name', 'encryptionRequired']).where('name', '=', name).executeTakeFirst();
  if (!row) throw new TunnelerRefused(`invalid service: no service is named '${name}'`, TUNNEL_ERROR.InvalidService, 'INVALID_SERVICE');
  return { id: row.id, name: row.name, encryptionRequired: isSet(row.encryptionRequired) };
}

/**
 * Whether the tunneler identity may use its own router for the service, as upstream checks a tunneler
 * (the hosting path has no session: edge router policy and service edge router policy, each named when
 * missing), and, for `kind`, whether a service policy grants it.
 */
export async function checkTunnelerAccess(ctx: Ctx, identity: TunnelerIdentity, service: { id: string; name: string }, routerId: string, routerName: string, kind: 'dial' | 'bind') {
  const db = ctx.store.db;
  const [grant, erp, serp] = await Promise.all([
    relatedIds(db, 'identity', identity.id, 'service', [kind]).where('t.entityId', '=', service.id).executeTakeFirst(),
    relatedIds(db, 'identity', identity.id, 'edge-router', ['erp']).where('t.entityId', '=', routerId).executeTakeFirst(),
    relatedIds(db, 'service', service.id, 'edge-router', ['serp']).where('t.entityId', '=', routerId).executeTakeFirst(),
  ]);
  const type = kind === 'dial' ? 'Dial' : 'Bind';
  if (!grant) throw new TunnelerRefused(`invalid service: no ${type} service policy grants the router's identity '${identity.name}' service '${service.name}'`, TUNNEL_ERROR.InvalidService, 'ACCESS_DENIED');
  if (!erp) throw new TunnelerRefused(`invalid edge router: no edge router policy gives the router's identity '${identity.name}' its own router '${routerName}'`, TUNNEL_ERROR.InvalidEdgeRouter, 'INVALID_EDGE_ROUTER_FOR_SESSION');
  if (!serp) throw new TunnelerRefused(`invalid edge router: no service edge router policy gives service '${service.name}' the router '${routerName}'`, TUNNEL_ERROR.InvalidEdgeRouter, 'INVALID_EDGE_ROUTER_FOR_SESSION');
}

/**
 * The tunneler's Bind or Dial session for the service: the API session's newest one of that type, else one
 * made as POST /sessions makes it (grants and posture checks as there; the access watch revokes it when its
 * grant goes, and the control channel then ends what it carried).
 */
export async function tunnelerSession(ctx: Ctx, identity: TunnelerIdentity, apiSession: TunnelerApiSession, serviceId: string, type: 'Dial' | 'Bind'): Promise<{ id: string }> {
  const had = await ctx.store.db
    .selectFrom('sessions')
    .select('id')
    .where('apiSessionId', '=', apiSession.id)
    .where('serviceId', '=', serviceId)
    .where('type', '=', type)
    .orderBy('createdAt', 'desc')
    .executeTakeFirst();
  if (had) return had;
  const { createSession } = await import('./resources/sessions.js');
  const made = (await createSession(ctx, { identityId: identity.id, identityName: identity.name, isAdmin: false, readOnlyAdmin: false, apiSessionId: apiSession.id, token: apiSession.token }, { serviceId, type })) as { id: string };
  return { id: made.id };
}
