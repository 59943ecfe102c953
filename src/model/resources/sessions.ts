// Sessions: an identity's permission, for one API session, to dial or bind one service, with the
// edge routers it may use. The token is a JWT naming them (2.x routers verify it themselves); only its
// hash and a sealed copy are stored.
// A session ends with its API session (foreign key, ON DELETE CASCADE).
import { Type } from 'typebox';
import { serviceRef } from './service-links.js';
import type { Db } from '../../store/db.js';
import { byIdOrName } from '../../store/by-id-or-name.js';
import { indexTags } from '../../store/entity-index.js';
import { iso } from '../clock.js';
import type { Ctx, Principal } from '../context.js';
import { writeTx } from '../crud.js';
import { ApiError, notFound } from '../errors.js';
import { hashSecret, newId } from '../ids.js';
import { signServiceSessionJwt } from '../pki/jwt.js';
import { grantsForMany, namedGrantsFor } from '../policy/access.js';
import { checksOfIdentity, failingChecks, failureValues, postureLeftToRouters, responsesOf } from '../posture/evaluate.js';
import { aliases, baseDetail, baseFilterable, defineResource, entityRef, type Row } from '../resource.js';
import { baseFields, EntityRef, MapOf, Tags } from '../schemas/common.js';
import { edgeRouterClientFields, edgeRouterClientView, isOnline } from './routers.js';
import { postureEvent, sessionEvent, sessionRefused } from '../events/emit.js';
import type { Missing, Named } from '../events/types.js';

export const SessionType = Type.Union([Type.Literal('Dial'), Type.Literal('Bind'), Type.Literal('Invalid')]);
export const sessionCreate = Type.Object({ serviceId: Type.String({ minLength: 1, maxLength: 255 }), type: Type.Optional(SessionType), tags: Type.Optional(Tags) }, { additionalProperties: false });

const SessionRouter = Type.Object({ ...edgeRouterClientFields, urls: MapOf(Type.String()) });
export const sessionDetail = Type.Object({
  ...baseFields,
  apiSession: EntityRef,
  apiSessionId: Type.String(),
  identityId: Type.String(),
  service: EntityRef,
  serviceId: Type.String(),
  token: Type.String(),
  type: Type.String(),
  edgeRouters: Type.Array(SessionRouter),
  servicePolicies: Type.Optional(Type.Array(EntityRef)),
});

/** How many routers a session or a service's router list offers (upstream's ListForIdentityAndService: 25). */
export const ROUTERS_PER_SESSION = 25;

/** The policies that give a pair its routers (a session's access log, edge#227). */
interface RouterGrants {
  erps: Named[];
  serps: Named[];
}

/**
 * The routers an identity may use for a service, for many (identity, service) pairs in two queries;
 * `withPolicies`, also the edge router and service edge router policies that give each pair those
 * routers (their names joined in the same two queries).
 */
async function routersForPairs(db: Db, pairs: { identityId: string; serviceId: string }[], withPolicies = false) {
  const out = new Map<string, Row[]>();
  const policies = new Map<string, RouterGrants>();
  if (!pairs.length) return { routers: out, policies };
  const identities = [...new Set(pairs.map((p) => p.identityId))];
  const services = [...new Set(pairs.map((p) => p.serviceId))];
  // From the services' side first: a service reaches a few routers, while an identity may reach every
  // router of a large network through hundreds of policies (the join from the identity's side read them
  // all, for the Large model 500 routers' policies on every session created).
  let servicesSide = db
    .selectFrom('policyMembers as bf')
    .innerJoin('policyMembers as bt', (j) => j.onRef('bt.policyId', '=', 'bf.policyId').on('bt.side', '=', 'edge-router'))
    .select(['bf.entityId as serviceId', 'bt.entityId as routerId'])
    .where('bf.side', '=', 'service')
    .where('bf.kind', '=', 'serp')
    .where('bf.entityId', 'in', services);
  if (withPolicies) servicesSide = servicesSide.innerJoin('serviceEdgeRouterPolicies as sp', 'sp.id', 'bf.policyId').select(['bf.policyId as policyId', 'sp.name as policyName']) as never;
  const ofServices = (await servicesSide.distinct().execute()) as { serviceId: string; routerId: string; policyId?: string; policyName?: string }[];
  const candidates = [...new Set(ofServices.map((l) => l.routerId))];
  if (!candidates.length) return { routers: out, policies };
  // Those routers, each with the identities (of these) an edge router policy gives it to.
  let routersSide = db
    .selectFrom('routers as r')
    .innerJoin('policyMembers as at', (j) => j.onRef('at.entityId', '=', 'r.id').on('at.side', '=', 'edge-router').on('at.kind', '=', 'erp'))
    .innerJoin('policyMembers as af', (j) => j.onRef('af.policyId', '=', 'at.policyId').on('af.side', '=', 'identity'))
    .selectAll('r')
    .select('af.entityId as viaIdentityId');
  if (withPolicies) routersSide = routersSide.innerJoin('edgeRouterPolicies as ep', 'ep.id', 'at.policyId').select(['at.policyId as viaPolicyId', 'ep.name as viaPolicyName']) as never;
  const rows = (await routersSide.distinct().where('r.id', 'in', candidates).where('af.entityId', 'in', identities).execute()) as Row[];
  // One row per router and identity (the policies giving it beside, when asked).
  const erpsOf = new Map<string, Map<string, string>>();
  const seen = new Set<string>();
  const routers: Row[] = [];
  for (const r of rows) {
    const key = `${r.viaIdentityId}|${r.id}`;
    if (withPolicies) {
      const m = erpsOf.get(key) ?? new Map<string, string>();
      m.set(r.viaPolicyId, r.viaPolicyName);
      erpsOf.set(key, m);
      delete r.viaPolicyId;
      delete r.viaPolicyName;
    }
    if (seen.has(key)) continue;
    seen.add(key);
    routers.push(r);
  }
  // Every router the policies allow, as upstream lists them (offline, disabled and unenrolled ones too,
  // shown offline with no addresses), connected ones first, at most ROUTERS_PER_SESSION of them.
  routers.sort((a, b) => Number(isOnline(b)) - Number(isOnline(a)) || Number(a.cost) - Number(b.cost) || String(a.name).localeCompare(String(b.name)));
  const servicesOf = new Map<string, Set<string>>();
  for (const l of ofServices) servicesOf.set(l.routerId, (servicesOf.get(l.routerId) ?? new Set()).add(l.serviceId));
  for (const p of pairs) {
    const key = `${p.identityId}|${p.serviceId}`;
    if (out.has(key)) continue;
    const mine = routers.filter((r) => r.viaIdentityId === p.identityId && servicesOf.get(r.id as string)?.has(p.serviceId)).slice(0, ROUTERS_PER_SESSION);
    out.set(key, mine.map(({ viaIdentityId: _, ...r }) => r));
    if (!withPolicies) continue;
    const ids = new Set(mine.map((r) => r.id as string));
    const erps = new Map<string, string>();
    for (const r of mine) for (const [id, name] of erpsOf.get(`${p.identityId}|${r.id}`) ?? []) erps.set(id, name);
    const serps = new Map<string, string>();
    for (const l of ofServices) if (l.serviceId === p.serviceId && ids.has(l.routerId)) serps.set(l.policyId!, l.policyName!);
    policies.set(key, { erps: named(erps), serps: named(serps) });
  }
  return { routers: out, policies };
}

const named = (m: Map<string, string>): Named[] => [...m].map(([id, name]) => ({ id, name })).sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));

/** The session form of an edge router: no base fields, plus its listener URLs. */
export const sessionRouter = (r: Row) => {
  const view = edgeRouterClientView(r);
  return { ...view, urls: view.supportedProtocols };
};

async function expandSessions(db: Db, rows: Row[], withPolicies: boolean) {
  const { routers } = await routersForPairs(db, rows.map((r) => ({ identityId: r.identityId, serviceId: r.serviceId })));
  for (const r of rows) r.routers = routers.get(`${r.identityId}|${r.serviceId}`) ?? [];
  if (!withPolicies) return;
  const grants = await grantsForMany(db, rows.map((r) => r.identityId), rows.map((r) => r.serviceId));
  const names = await policyNames(db, grants);
  for (const r of rows) {
    r.servicePolicies = grants
      .filter((g) => g.identityId === r.identityId && g.serviceId === r.serviceId && g.kind === String(r.type).toLowerCase())
      .map((g) => entityRef('service-policies', g.policyId, names.get(g.policyId) ?? ''));
  }
}

async function policyNames(db: Db, grants: readonly { policyId: string }[]) {
  const ids = [...new Set(grants.map((g) => g.policyId))];
  const rows = ids.length ? await db.selectFrom('servicePolicies').select(['id', 'name']).where('id', 'in', ids).execute() : [];
  return new Map(rows.map((r) => [r.id, r.name]));
}

const declFor = (withPolicies: boolean) =>
  defineResource({
    name: 'session',
    plural: 'sessions',
    table: 'sessions',
    apis: ['management', 'client'],
    ops: ['list', 'get', 'delete'],
    description: 'Sessions: permissions to dial or bind a service, each tied to an API session',
    schemas: { detail: sessionDetail },
    filterable: {
      ...baseFilterable,
      token: { column: 'e.token_hash', type: 'string', sortable: true, encode: hashSecret },
      apiSession: { column: 'e.api_session_id', type: 'string', sortable: true },
      service: { column: 'e.service_id', type: 'string', sortable: true },
      type: { column: 'e.type', type: 'string', sortable: true },
      ...aliases({
        apiSessionId: { column: 'e.api_session_id', type: 'string', sortable: true },
        identityId: { column: 'e.identity_id', type: 'string', sortable: true },
        serviceId: { column: 'e.service_id', type: 'string', sortable: true },
      }),
    },
    detailQuery: (db) => db.selectFrom('sessions as e').innerJoin('services as s', 's.id', 'e.serviceId').selectAll('e').select('s.name as serviceName') as never,
    expand: (db, rows) => expandSessions(db, rows, withPolicies),
    toDetail: (r, ctx) => Object.assign(baseDetail('sessions', r, { 'route-path': { href: `./sessions/${r.id}/route-path` } }), {
      apiSession: entityRef('api-sessions', r.apiSessionId, ''),
      apiSessionId: r.apiSessionId,
      identityId: r.identityId,
      service: serviceRef(r.serviceId, r.serviceName),
      serviceId: r.serviceId,
      token: r.token ?? (r.tokenSealed ? ctx.sealer.open(r.tokenSealed) : ''),
      type: r.type,
      edgeRouters: ((r.routers as Row[]) ?? []).map(sessionRouter),
      ...(withPolicies ? { servicePolicies: r.servicePolicies ?? [] } : {}),
    }),
    cli: { columns: ['id', 'type', 'service.name', 'identity=identityId@identities', 'apiSessionId', 'createdAt'] },
  });

export const sessions = declFor(true);
export const clientSessions = declFor(false);

interface PolicyFailure {
  policyId: string;
  policyName: string;
  checks: ({ postureCheckId: string; postureCheckName: string; postureCheckType: string; reportOnly?: boolean } & Record<string, unknown>)[];
}

/**
 * A Dial or Bind session for a service the caller may use, whose posture checks pass. Its event names
 * what granted it, a refusal's what was missing (the access log, edge#227), from what is read anyway:
 * the grants (with their policies' names), the checks, the routers (with the policies giving them).
 */
export async function createSession(ctx: Ctx, who: Principal, body: { serviceId: string; type?: string; tags?: Record<string, unknown> }) {
  const db = ctx.store.db;
  if (!who.apiSessionId) throw new ApiError(400, 'NO_API_SESSION', 'A session belongs to an API session: authenticate first (the local administrator has none)');
  const type = body.type ?? 'Dial';
  if (type === 'Invalid') throw new ApiError(400, 'INVALID_FIELD', 'type must be Dial or Bind', { field: 'type', reason: 'must be Dial or Bind', value: type });
  const service = await byIdOrName<{ id: string; name: string }>(db, 'services', body.serviceId, ['id', 'name']);
  if (!service) throw notFound('service', body.serviceId);
  const kind = type === 'Dial' ? 'dial' : 'bind';
  // A JWT 2.x routers verify on their own (pki/jwt.ts); opaque to all else. Signed on the crypto
  // thread while the grants are read (a refused session's signature is dropped): waited for after the
  // reads, it was 0.6 ms of a session's answer on Medium; 0.4 so.
  const id = newId();
  const signing = signServiceSessionJwt(ctx, { id, apiSessionId: who.apiSessionId, identityId: who.identityId, serviceId: service.id, type: type as 'Dial' | 'Bind' });
  signing.catch(() => {});
  // The identity's grants on the service, Dial and Bind: any of them makes the service visible to it;
  // and, at the same time, the checks of its policies of this kind (those of these grants among them).
  const [all, checks] = await Promise.all([namedGrantsFor(db, who.identityId, [service.id]), checksOfIdentity(db, who.identityId, [kind])]);
  const refused = (missing: Missing[]) => sessionRefused(ctx, { type, apiSessionId: who.apiSessionId, identityId: who.identityId, identityName: who.identityName, serviceId: service.id, serviceName: service.name, missing });
  const noPolicy = (): Missing => ({ code: 'NO_SERVICE_POLICY', message: `no ${type} service policy grants identity '${who.identityName}' service '${service.name}'` });
  // A service the caller cannot see does not exist, as far as it can tell.
  if (!who.isAdmin && !all.length) {
    refused([noPolicy()]);
    throw notFound('service', body.serviceId);
  }
  const grants = all.filter((g) => g.kind === kind);
  if (!grants.length) {
    refused([noPolicy()]);
    throw new ApiError(401, 'UNAUTHORIZED', `No service policy grants this identity ${type} on service '${service.name}'`);
  }

  // Responses matter only to checks: none in most networks, so no query for them. A JWT API session
  // whose SDK reports its posture to 2.x routers only is judged there (postureLeftToRouters).
  const [responses, leftToRouters] = checks.size ? await Promise.all([responsesOf(db, who.apiSessionId), postureLeftToRouters(db, [who.apiSessionId])]) : [new Map(), new Set<string>()];
  const policyChecks = leftToRouters.size ? new Map<string, never[]>() : checks;
  const now = ctx.clock.now();
  // Each granting policy's failing checks. A policy whose enforced checks pass grants the session; a
  // failing report-only check (ziti#2095) denies nothing, but when every policy has one failing (the
  // session would be refused if they were enforced) the failure is recorded all the same.
  const judged = grants.map((g) => ({ g, list: policyChecks.get(g.policyId) ?? [], ...failingChecks(policyChecks.get(g.policyId) ?? [], responses, now) }));
  const passing = judged.filter((j) => !j.enforced.length);
  const clean = passing.some((j) => !j.reported.length);
  const failures: PolicyFailure[] = clean
    ? []
    : judged.map(({ g, enforced, reported }) => ({
        policyId: g.policyId,
        policyName: g.policyName,
        checks: [...enforced, ...reported].map((c) => ({ postureCheckId: c.id, postureCheckName: c.name, postureCheckType: c.typeId, ...failureValues(c, responses, now), ...(c.reportOnly ? { reportOnly: true } : {}) })),
      }));
  if (!passing.length) {
    await recordFailure(ctx, who, service, type, failures, false);
    const missing = [...new Set(failures.flatMap((f) => f.checks.filter((c) => !c.reportOnly).map((c) => c.postureCheckName)))];
    refused([{
      code: 'POSTURE_CHECKS_FAILING',
      message: `posture checks failing: ${missing.join(', ')}`,
      policies: judged.map((j) => ({ id: j.g.policyId, name: j.g.policyName, posture_checks: j.enforced.map((c) => ({ id: c.id, name: c.name, type: c.typeId })) })),
    }]);
    throw new ApiError(401, 'INVALID_POSTURE', `The posture checks of every policy granting ${type} on '${service.name}' fail: ${missing.join(', ')}; submit posture responses (POST /posture-response) and try again`);
  }
  // What grants it: the policies whose enforced checks pass, and their checks that pass.
  const passed = new Map<string, { id: string; name: string; type: string }>();
  for (const j of passing) {
    const failed = new Set(j.reported.map((c) => c.id));
    for (const c of j.list) if (!failed.has(c.id)) passed.set(c.id, { id: c.id, name: c.name, type: c.typeId });
  }
  const grantedBy = {
    service_policies: named(new Map(passing.map((j) => [j.g.policyId, j.g.policyName]))),
    posture_checks: [...passed.values()].sort((a, b) => a.name.localeCompare(b.name)),
  };

  const token = await signing;
  const at = iso(now);
  const row: Row = { id, createdAt: at, updatedAt: at, tags: JSON.stringify(body.tags ?? {}), apiSessionId: who.apiSessionId, identityId: who.identityId, serviceId: service.id, serviceName: service.name, type, token };
  const pair = [{ identityId: who.identityId, serviceId: service.id }];
  // The session's routers are read while the insert commits (they do not depend on it): on SQLite
  // during the WAL's flush, on PostgreSQL on another connection, instead of after.
  const [, reach] = await Promise.all([
    writeTx(ctx, async (tx) => {
      await tx
        .insertInto('sessions')
        .values({ id, createdAt: at, updatedAt: at, tags: JSON.stringify(body.tags ?? {}), apiSessionId: who.apiSessionId, identityId: who.identityId, serviceId: service.id, type, tokenHash: hashSecret(token), tokenSealed: ctx.sealer.seal(token), grantedBy: JSON.stringify(grantedBy) })
        .execute();
      // A new row has no tags to replace: index only those it comes with.
      if (body.tags && Object.keys(body.tags).length) await indexTags(tx, id, body.tags);
    }),
    routersForPairs(db, pair, true),
    // Granted with report-only checks failing: recorded beside the insert, not after it.
    clean ? undefined : recordFailure(ctx, who, service, type, failures, true, id),
  ]);
  const key = `${who.identityId}|${service.id}`;
  const routers = (row.routers = reach.routers.get(key) ?? []) as Row[];
  const via = reach.policies.get(key) ?? { erps: [], serps: [] };
  sessionEvent(ctx, 'created', { id, type, apiSessionId: who.apiSessionId, identityId: who.identityId, serviceId: service.id }, {
    identityName: who.identityName,
    serviceName: service.name,
    grantedBy: { ...grantedBy, edge_router_policies: via.erps, service_edge_router_policies: via.serps, edge_routers: routers.map((r) => ({ id: String(r.id), name: String(r.name) })) },
    // A session with no router to use is made (as upstream), and says what it lacks.
    missing: routers.length ? undefined : [noRouter(who.identityName, service.name, reach.policies.size > 0 || reach.routers.size > 0)],
  });
  return clientSessions.toDetail(row, ctx);
}

/** Why a session offers no edge router. `serviceHasRouters`: some service edge router policy gives the service a router. */
function noRouter(identityName: string, serviceName: string, serviceHasRouters: boolean): Missing {
  return serviceHasRouters
    ? { code: 'NO_COMMON_ROUTER', message: `no edge router policy gives identity '${identityName}' a router that a service edge router policy gives service '${serviceName}'` }
    : { code: 'NO_SERVICE_EDGE_ROUTER_POLICY', message: `no service edge router policy gives service '${serviceName}' an edge router` };
}

const FAILURES_KEPT = 50;

/**
 * A failed service request (the identity's last FAILURES_KEPT are kept) and its posture event, which the
 * metrics count (ztc_posture_check_failures_total). `granted`: only report-only checks failed, and the
 * session (`sessionId`) was made.
 */
async function recordFailure(ctx: Ctx, who: Principal, service: { id: string; name: string }, type: string, failures: PolicyFailure[], granted: boolean, sessionId?: string) {
  await writeTx(ctx, async (tx) => {
    await tx
      .insertInto('failedServiceRequests')
      .values({ id: newId(), identityId: who.identityId, apiSessionId: who.apiSessionId, serviceId: service.id, serviceName: service.name, sessionType: type, at: iso(ctx.clock.now()), policyFailures: JSON.stringify(failures), reportOnly: granted ? 1 : 0 })
      .execute();
    const keep = tx.selectFrom('failedServiceRequests').select('id').where('identityId', '=', who.identityId).orderBy('at', 'desc').orderBy('id', 'desc').limit(FAILURES_KEPT);
    await tx.deleteFrom('failedServiceRequests').where('identityId', '=', who.identityId).where('id', 'not in', keep).execute();
  });
  const checks = new Map<string, { id: string; name: string; type: string; report_only: boolean }>();
  for (const f of failures) for (const c of f.checks) checks.set(c.postureCheckId, { id: c.postureCheckId, name: c.postureCheckName, type: c.postureCheckType, report_only: !!c.reportOnly });
  postureEvent(ctx, granted ? 'reported' : 'denied', {
    identityId: who.identityId, apiSessionId: who.apiSessionId, serviceId: service.id, serviceName: service.name, sessionType: type, sessionId,
    policies: failures.map((f) => ({ id: f.policyId, name: f.policyName })), checks: [...checks.values()],
  });
}

/** The session-token header of GET /services/{id}/edge-routers must name one of the caller's sessions. */
export async function checkSessionToken(db: Db, identityId: string, token: string | undefined) {
  if (token === undefined) return;
  const found = await db.selectFrom('sessions').select('id').where('tokenHash', '=', hashSecret(token)).where('identityId', '=', identityId).executeTakeFirst();
  if (!found) throw new ApiError(401, 'UNAUTHORIZED', 'The session-token header does not name a current session of this identity');
}
