// The access log's circuits (edge#227): what granted a circuit, for its fabric.circuits events. The
// session that dialed keeps what granted it when it was made (sessions.granted_by: its service policies
// and the posture checks that passed); the edge router policies and service edge router policies are
// those that give the identity and the service the router the circuit came in by. One statement, read
// by the data plane's recorder after the circuit is made, never on the dial's path.
import { fromJson } from '../store/json.js';
import { first, precompile } from '../store/precompiled.js';
import type { Ctx } from './context.js';
import type { GrantedBy, Named } from './events/types.js';

// Compiled once (built on every circuit it cost the embedded router's thread about as much as the dial's
// own checks): p(0) the session, p(1) the router, p(2) the identity, p(3) the service.
const grantQuery = precompile<{ grantedBy: string | null; routerName: string | null; erps: unknown; serps: unknown }>((db, p, d) => {
  // The policies of one kind that hold the entity on `side` and the router.
  const via = (side: 'identity' | 'service', kind: 'erp' | 'serp', entityId: string, table: 'edgeRouterPolicies' | 'serviceEdgeRouterPolicies') =>
    db
      .selectFrom('policyMembers as f')
      .innerJoin('policyMembers as t', (j) => j.onRef('t.policyId', '=', 'f.policyId').on('t.side', '=', 'edge-router').on('t.entityId', '=', p(1)))
      .innerJoin(`${table} as p` as 'edgeRouterPolicies as p', 'p.id', 'f.policyId')
      .select(['p.id', 'p.name'])
      .distinct()
      .where('f.side', '=', side)
      .where('f.kind', '=', kind)
      .where('f.entityId', '=', entityId);
  return db.selectNoFrom([
    db.selectFrom('sessions').select('grantedBy').where('id', '=', p(0)).as('grantedBy'),
    db.selectFrom('routers').select('name').where('id', '=', p(1)).as('routerName'),
    d.jsonRows(via('identity', 'erp', p(2), 'edgeRouterPolicies'), ['id', 'name']).as('erps'),
    d.jsonRows(via('service', 'serp', p(3), 'serviceEdgeRouterPolicies'), ['id', 'name']).as('serps'),
  ] as never) as never;
});

/** What granted the circuit `sessionId` opened for `identityId` on `serviceId`, entering at `routerId`. */
export async function circuitGrant(ctx: Ctx, o: { sessionId: string; identityId: string; serviceId: string; routerId: string }): Promise<GrantedBy> {
  const row = await first(ctx.store.db, grantQuery, [o.sessionId, o.routerId, o.identityId, o.serviceId]);
  const list = (v: unknown): Named[] => ((typeof v === 'string' ? JSON.parse(v) : (v ?? [])) as Named[]).sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  const session = fromJson<Partial<GrantedBy>>(row?.grantedBy ?? null, {});
  return {
    service_policies: session.service_policies ?? [],
    posture_checks: session.posture_checks ?? [],
    edge_router_policies: list(row?.erps),
    service_edge_router_policies: list(row?.serps),
    edge_routers: [{ id: o.routerId, name: row?.routerName ?? '' }],
  };
}
