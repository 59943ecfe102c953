// Which identities have an SDK connected to an edge router, as this controller's data plane last
// reported it (fabric/worker.ts): its embedded router's SDK connections, 2.x routers' ConnectEvents,
// and the API-session heartbeats of 1.x routers. Kept in memory per controller (by its event hub, which
// the per-request copies of the context share): routers of another controller sharing the store are
// not seen from here, so an identity not connected here is "unknown", not "offline".
import { sql } from 'kysely';
import type { Ctx } from './context.js';
import type { FieldSpec } from './resource.js';

const connected = new WeakMap<Ctx['events'], Set<string>>();

/** The data plane's latest report (all connected identities); an empty list when it stops. */
export function setEdgeConnections(ctx: Pick<Ctx, 'events'>, identityIds: Iterable<string>) {
  connected.set(ctx.events, new Set(identityIds));
}

/** The identity detail's connection fields (hasEdgeRouterConnection, and 2.x's edgeRouterConnectionStatus). */
export function edgeRouterConnection(ctx: Pick<Ctx, 'events'>, identityId: string): { hasEdgeRouterConnection: boolean; edgeRouterConnectionStatus: 'online' | 'unknown' } {
  const on = !!connected.get(ctx.events)?.has(identityId);
  return { hasEdgeRouterConnection: on, edgeRouterConnectionStatus: on ? 'online' : 'unknown' };
}

/**
 * The identity list's filter on the same fields (ziti#4376: who is online): `hasEdgeRouterConnection =
 * true`, `edgeRouterConnectionStatus = "online"`, compared with the identities this controller's data
 * plane reports connected now (one array parameter, whatever their number).
 */
export function connectionFilterFields(ctx: Pick<Ctx, 'events' | 'store'>): Record<string, FieldSpec> {
  const d = ctx.store.dialect;
  const on = d.anyOf(sql.ref('e.id'), d.arrayParam([...(connected.get(ctx.events) ?? [])]));
  return {
    hasEdgeRouterConnection: { column: 'e.id', type: 'boolean', sortable: true, expr: sql`(case when ${on} then 1 else 0 end)` },
    edgeRouterConnectionStatus: { column: 'e.id', type: 'string', sortable: true, expr: sql`(case when ${on} then 'online' else 'unknown' end)` },
  };
}
