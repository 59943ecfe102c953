// What a Dial or Bind's checks read (fabric/session-checks.ts), as one statement compiled once: the
// service session its token names, with its service, identity and API session, and whether the
// policies still grant it and let its identity and service use the router. Three statements before, each
// built by Kysely on every dial (a third of the embedded router's CPU per dial, measured by profile) and
// on PostgreSQL two waits; nothing is cached, so a session deleted or a policy changed on any controller
// is seen by the next dial as it was.
import { sql } from 'kysely';
import { isSet } from '../store/json.js';
import { first, precompile } from '../store/precompiled.js';
import type { Ctx } from './context.js';
import type { EdgeSession } from './data-plane.js';
import { hashSecret } from './ids.js';

interface Row {
  id: string;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  serviceName: string;
  identityName: string;
  type: string;
  encryptionRequired: unknown;
  apiSessionExpiresAt: string | null;
  granted: unknown;
  routerAllowed: unknown;
}

// p(0) the token's hash, p(1) the policy kind ('dial' or 'bind'), p(2) the router. The grant: one of the
// service's policies of that kind holds the identity (a primary-key probe per policy, as grantsFor). The
// router: one edge router policy holds the identity and the router, and one service edge router policy
// the service and the router (policy/access.ts sharedEdgeRouters, for one router).
const dialCheck = precompile<Row>((db, p) =>
  db
    .selectFrom('sessions as e')
    .innerJoin('services as s', 's.id', 'e.serviceId')
    .innerJoin('identities as i', 'i.id', 'e.identityId')
    .leftJoin('apiSessions as a', 'a.id', 'e.apiSessionId')
    .select(['e.id', 'e.apiSessionId', 'e.identityId', 'e.serviceId', 's.name as serviceName', 'i.name as identityName', 'e.type', 's.encryptionRequired', 'a.expiresAt as apiSessionExpiresAt'])
    .select([
      sql`exists (select 1 from policy_members g where g.entity_id = e.service_id and g.side = 'service' and g.kind = ${p(1)} and (select 1 from policy_members h where h.policy_id = g.policy_id and h.side = 'identity' and h.entity_id = e.identity_id) = 1)`.as('granted'),
      sql`(exists (select 1 from policy_members f inner join policy_members t on t.policy_id = f.policy_id and t.side = 'edge-router' and t.entity_id = ${p(2)} where f.entity_id = e.identity_id and f.side = 'identity' and f.kind = 'erp')
        and exists (select 1 from policy_members f inner join policy_members t on t.policy_id = f.policy_id and t.side = 'edge-router' and t.entity_id = ${p(2)} where f.entity_id = e.service_id and f.side = 'service' and f.kind = 'serp'))`.as('routerAllowed'),
    ])
    .where('e.tokenHash', '=', p(0)) as never,
);

/** The service session behind `token`, and whether the policies let it `kind` on `routerId`. */
export async function sessionForDial(ctx: Ctx, token: string, kind: 'dial' | 'bind', routerId: string): Promise<{ session: EdgeSession; grant: boolean; router: boolean } | null> {
  const r = await first(ctx.store.db, dialCheck, [hashSecret(token), kind, routerId]);
  if (!r) return null;
  return {
    session: {
      id: r.id,
      apiSessionId: r.apiSessionId,
      identityId: r.identityId,
      serviceId: r.serviceId,
      serviceName: r.serviceName,
      identityName: r.identityName,
      type: r.type,
      encryptionRequired: isSet(r.encryptionRequired),
      jwt: !!r.apiSessionExpiresAt,
    },
    grant: isSet(r.granted),
    router: isSet(r.routerAllowed),
  };
}
