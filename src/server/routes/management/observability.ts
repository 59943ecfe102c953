// What an administrator can learn about the network as a whole and about one identity: resource
// counts, an identity's posture data and failed service requests, and its trace spec.
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { Type } from 'typebox';
import { iso } from '../../../model/clock.js';
import type { Ctx } from '../../../model/context.js';
import { writeTx } from '../../../model/crud.js';
import { invalidField } from '../../../model/errors.js';
import { recordRowChange } from '../../../model/events/record.js';
import { failedRequestsOf, postureDataOf } from '../../../model/posture/responses.js';
import { onlineControllerCount } from '../../../model/resources/controllers.js';
import { identities } from '../../../model/resources/identities.js';
import { POSTURE_CHECK_TYPES } from '../../../model/resources/posture-check-types.js';
import { Envelope, IdParams, MapOf } from '../../../model/schemas/common.js';
import type { Tx } from '../../../store/db.js';
import { actorCtx } from '../../actor.js';
import { errors } from '../../crud.js';
import { listOf, ok } from '../../envelope.js';
import { parentExists } from '../../related.js';

/**
 * What /summary counts, under upstream's keys (one per store it keeps; `routers.edge` and
 * `services.edge` are its edge sub-stores): the name it reports, and the rows it counts.
 */
const COUNTED: [string, string, string?][] = [
  ['apiSessionCertificates', 'api_session_certificates'], ['apiSessions', 'api_sessions'], ['authPolicies', 'auth_policies'],
  ['authenticators', 'authenticators'], ['cas', 'cas'], ['configTypes', 'config_types'], ['configs', 'configs'],
  ['edgeRouterPolicies', 'edge_router_policies'], ['enrollments', 'enrollments'], ['externalJwtSigners', 'external_jwt_signers'],
  ['identities', 'identities'], ['identityTypes', 'identity_types'], ['mfas', 'mfa'], ['postureChecks', 'posture_checks'],
  ['routers', 'routers'], ['routers.edge', 'routers', 'is_edge = 1'], ['serviceEdgeRouterPolicies', 'service_edge_router_policies'],
  ['revocations', 'revocations'], ['servicePolicies', 'service_policies'], ['services', 'services'], ['services.edge', 'services'],
  ['sessions', 'sessions'], ['terminators', 'terminators'],
];

/**
 * Keys upstream reports that have no rows here: ztc keeps no eventual events (work its store defers; ztc
 * ends a credential's sessions in the transaction that removes it, leaving nothing for later).
 */
const NOTHING_STORED = ['eventualEvents'];

/** Go-style durations as upstream takes them: "90s", "5m", "1h30m". */
export function parseDuration(text: string): number | undefined {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let rest = text.trim();
  if (!rest) return undefined;
  while (rest) {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest);
    if (!m) return undefined;
    total += Number(m[1]) * units[m[2]];
    rest = rest.slice(m[0].length);
  }
  return total;
}

export function registerObservability(app: FastifyInstance, ctx: Ctx) {
  app.get(
    '/summary',
    { config: { access: 'admin' }, schema: { operationId: 'listSummary', tags: ['Informational'], summary: 'How many of each resource there are', response: { 200: Envelope(MapOf(Type.Integer())), ...errors(401) } } },
    async () => {
      const parts = COUNTED.map(([name, table, where]) => sql`select ${sql.lit(name)} as name, count(*) as n from ${sql.table(table)}${where ? sql.raw(` where ${where}`) : sql``}`);
      const rows = await sql<{ name: string; n: number | string }>`${sql.join(parts, sql` union all `)}`.execute(ctx.store.db);
      const counts: Record<string, number> = Object.fromEntries(rows.rows.map((r) => [r.name, Number(r.n)]));
      for (const name of NOTHING_STORED) counts[name] = 0;
      counts.postureCheckTypes = POSTURE_CHECK_TYPES.length;
      // Upstream counts controllers only in HA (a raft cluster), 0 otherwise; here HA is several
      // controllers serving one database, so one controller alone counts 0 as upstream's does.
      const live = await onlineControllerCount(ctx);
      counts.controllers = live > 1 ? live : 0;
      // Keys in byte order, as Go writes a map.
      return ok(Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1))));
    },
  );

  app.get(
    '/identities/:id/posture-data',
    { config: { access: 'admin' }, schema: { operationId: 'getIdentityPostureData', tags: ['Identities'], summary: 'What the identity\'s API sessions reported about its device', params: IdParams, response: { 200: Envelope(Type.Object({}, { additionalProperties: true })), ...errors(401, 404) } } },
    async (req) => {
      const { id } = req.params as { id: string };
      await parentExists(ctx, identities, id);
      return ok(await postureDataOf(ctx.store.db, id));
    },
  );

  app.get(
    '/identities/:id/failed-service-requests',
    { config: { access: 'admin' }, schema: { operationId: 'getIdentityFailedServiceRequests', tags: ['Identities'], summary: 'The identity\'s recent session requests refused for posture, newest first, with the checks that failed', params: IdParams, response: { 200: Type.Object({ data: Type.Array(Type.Object({}, { additionalProperties: true })), meta: Type.Any() }), ...errors(401, 404) } } },
    async (req) => {
      const { id } = req.params as { id: string };
      await parentExists(ctx, identities, id);
      const data = await failedRequestsOf(ctx.store.db, id);
      return listOf(data, { limit: data.length, offset: 0, totalCount: data.length }, []);
    },
  );

  app.put(
    '/identities/:id/trace',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'updateIdentityTracing', tags: ['Identities'], summary: 'Turn tracing of an identity\'s traffic on (for a duration such as "10m") or off', params: IdParams,
        body: Type.Object({ enabled: Type.Optional(Type.Boolean()), duration: Type.Optional(Type.String({ maxLength: 32 })), traceId: Type.Optional(Type.String({ maxLength: 255 })), channels: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 })) }, { additionalProperties: false }),
        response: { 200: Envelope(Type.Object({ enabled: Type.Boolean(), traceId: Type.String(), until: Type.String() })), ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      const b = req.body as { enabled?: boolean; duration?: string; traceId?: string; channels?: string[] };
      await parentExists(ctx, identities, id);
      const now = ctx.clock.now();
      const c = actorCtx(ctx, req);
      // A trace shows an identity's traffic: who turned it on or off is the audit's business.
      const traced = (tx: Tx) => tx.selectFrom('identityTraces').selectAll().where('identityId', '=', id).executeTakeFirst();
      if (!b.enabled) {
        await writeTx(c, async (tx) => {
          const before = await traced(tx);
          await tx.deleteFrom('identityTraces').where('identityId', '=', id).execute();
          if (before) await recordRowChange(tx, c, 'identityTraces', 'deleted', id, before as never, null);
        });
        return ok({ enabled: false, traceId: '', until: iso(now) });
      }
      const ms = parseDuration(b.duration ?? '10m');
      if (ms === undefined || ms <= 0 || ms > 7 * 86_400_000) throw invalidField('duration', 'must be a duration such as 90s, 10m or 1h30m, at most a week', b.duration);
      const until = iso(new Date(now.getTime() + ms));
      const row = { traceId: b.traceId ?? '', channels: JSON.stringify(b.channels ?? []), until };
      await writeTx(c, async (tx) => {
        const before = await traced(tx);
        await tx.insertInto('identityTraces').values({ identityId: id, ...row }).onConflict((oc) => oc.column('identityId').doUpdateSet(row)).execute();
        await recordRowChange(tx, c, 'identityTraces', before ? 'updated' : 'created', id, (before as never) ?? null, { identityId: id, ...row });
      });
      return ok({ enabled: true, traceId: row.traceId, until });
    },
  );
}
