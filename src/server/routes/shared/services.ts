// Services in both APIs. Management: every service, as an admin sees it. Client: the services the caller
// may dial or bind (admins see all), with the caller's permissions, configs and posture queries; and the
// edge routers the caller may use, in general and for one service.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { listResource } from '../../../model/crud.js';
import { grantedHere, idIn, relatedIds, SERVICE_POLICY_KINDS, sharedEdgeRouters } from '../../../model/policy/access.js';
import type { AnyQuery, ResourceDecl, Row } from '../../../model/resource.js';
import type { Db } from '../../../store/db.js';
import { baseDetail, defineResource } from '../../../model/resource.js';
import { edgeRouterClientFields, edgeRouterClientView, edgeRouterLinks, edgeRouters, isOnline } from '../../../model/resources/routers.js';
import { expandServices, serviceByNameWithSession, serviceViewFor, services, type ServiceViewer, type ServiceWithSession } from '../../../model/resources/services.js';
import { checkSessionToken, ROUTERS_PER_SESSION, sessionRouter } from '../../../model/resources/sessions.js';
import { baseFields, Envelope, IdParams, ListEnvelope, ListQuery, MapOf } from '../../../model/schemas/common.js';
import { fromJson } from '../../../store/json.js';
import { collect, PAGE_DEFAULT, type ListParams } from '../../../store/list.js';
import { all } from '../../../store/precompiled.js';
import { parseFilter } from '../../../store/filter/parser.js';
import type { Query } from '../../../store/filter/ast.js';
import { errors, filterableFields, firstPageAnswer, firstPageStatements, mountResource, plainFirstPage, type MountOptions } from '../../crud.js';
import { listOf } from '../../envelope.js';
import { principalOf, readsAll } from '../../plugins/auth.js';
import { parentExists } from '../../related.js';

const ConfigTypesQuery = { configTypes: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100, description: 'Config type ids or names (or "all") whose configs the services carry' })) };

function viewerOf(req: FastifyRequest): ServiceViewer {
  const p = principalOf(req);
  const q = (req.query as { configTypes?: string[] | string }).configTypes ?? [];
  const asked = typeof q === 'string' ? [q] : q;
  // With those the client asked for when it authenticated (read here, not on every request).
  const atLogin = fromJson<string[]>(req.apiSession?.configTypes, []);
  return { identityId: p.identityId, isAdmin: p.isAdmin, configTypes: [...new Set([...asked, ...atLogin])], apiSessionId: p.apiSessionId || undefined };
}
const viewer = (req: FastifyRequest) => serviceViewFor(viewerOf(req));

/**
 * The name a client's list asks for when it asks for one service by name and nothing else
 * (`filter=name="x"`, config types allowed): what SDKs ask before each dial and bind. Read before the
 * request is validated; anything else is listed the usual way (and a bad filter answered there).
 */
function lookedUpName(req: FastifyRequest): string | undefined {
  const q = req.query as Record<string, unknown>;
  if (typeof q.filter !== 'string' || Object.keys(q).some((k) => k !== 'filter' && k !== 'configTypes')) return undefined;
  let parsed: Query;
  try {
    parsed = parseFilter(q.filter);
  } catch {
    return undefined;
  }
  const w = parsed.where;
  if (parsed.sort.length || parsed.skip !== undefined || parsed.limit !== undefined) return undefined;
  return w?.kind === 'cmp' && w.op === '=' && w.lhs.kind === 'field' && w.lhs.name === 'name' && w.rhs.kind === 'string' ? w.rhs.value : undefined;
}

/**
 * One service by name, read with the API session in one statement: the service is the client's to see
 * when a policy grants it or the client reads as an admin does, as visibleServices scopes any list.
 */
const serviceByName = (ctx: Ctx): NonNullable<MountOptions['listWithSession']> => ({
  read: async (_ctx, tokenHash, req) => {
    const name = lookedUpName(req);
    return name === undefined ? undefined : serviceByNameWithSession(ctx.store.db, tokenHash, name);
  },
  answer: async (req, read) => {
    const { row, reads } = read as ServiceWithSession['rest'];
    const rows = row && (readsAll(principalOf(req)) || reads.grants.length) ? [row] : [];
    await expandServices(ctx.store.db, rows, ctx.clock.now(), viewerOf(req), reads);
    return { items: rows.map((r) => services.toDetail(r, ctx)), pagination: { limit: PAGE_DEFAULT, offset: 0, totalCount: rows.length } };
  },
});

/** Services granted to the identity by a Dial or Bind policy (`identityId` a value or a precompiled parameter). */
const grantedServices = (db: Db, identityId: string) => idIn(relatedIds(db, 'identity', identityId, 'service', SERVICE_POLICY_KINDS));

// The client's service list as SDKs ask for it (a first page, config types allowed): the page in one
// statement compiled once per page size, as the caller's routers are (below); its reads as before.
const grantedServicePage = firstPageStatements((db, p) => db.selectFrom('services as e').selectAll('e').where(grantedServices(db, p(0)) as never) as never);
const everyServicePage = firstPageStatements((db) => db.selectFrom('services as e').selectAll('e') as never);
const firstServicePage = (ctx: Ctx) => (req: FastifyRequest, limit: number) => {
  const p = principalOf(req);
  return readsAll(p) ? all(ctx.store.db, everyServicePage(limit), []) : all(ctx.store.db, grantedServicePage(limit), [p.identityId]);
};

/** Non-admins see the services a service policy grants them. */
const visibleServices = (ctx: Ctx) => (req: FastifyRequest) => {
  const p = principalOf(req);
  if (readsAll(p)) return undefined;
  // One service (by name, by id): is it granted? (SQLite listed every granted service first: 5,000
  // memberships for the bench's probe identity, 0.13 ms where this takes 0.04.) A list: the granted ids.
  return (q: AnyQuery, how?: { pinned?: boolean }) =>
    q.where((how?.pinned ? grantedHere(p.identityId) : grantedServices(ctx.store.db, p.identityId)) as never);
};

/** Only what the client view shows: no enrollment join, no certificates (a client lists hundreds). */
const clientRouterRows = (db: Db) =>
  db
    .selectFrom('routers as e')
    .select(['e.id', 'e.createdAt', 'e.updatedAt', 'e.tags', 'e.name', 'e.appData', 'e.cost', 'e.disabled', 'e.hostname', 'e.noTraversal', 'e.supportedProtocols', 'e.isVerified', 'e.onlineUntil', 'e.versionInfo', 'e.capabilitiesMask'])
    .where('e.isEdge', '=', 1);

/** Edge routers as a client sees them: no enrollment or certificate details. */
const clientEdgeRouters: ResourceDecl = defineResource({
  ...edgeRouters,
  apis: ['client'],
  schemas: { detail: Type.Object({ ...baseFields, ...edgeRouterClientFields }) },
  toDetail: (r) => Object.assign(baseDetail('edge-routers', r, edgeRouterLinks(r.id)), edgeRouterClientView(r)),
  // As upstream (current_identity_router.go): only routers that finished enrollment; SDKs would try the others.
  detailQuery: (db) => clientRouterRows(db).where('e.isVerified', '=', 1) as never,
});

/** Enrolled edge routers an edge router policy gives the identity (`identityId` a value or a precompiled parameter). */
const myRouters = (db: Db, identityId: string) => (q: AnyQuery) => q.where('e.isVerified', '=', 1).where(idIn(relatedIds(db, 'identity', identityId, 'edge-router', ['erp'])) as never);

// The caller's routers as SDKs ask for them (a first page, no filter, no sort): one statement compiled
// once per page size, instead of the generic list's built query, its page of ids and then their rows
// (0.9 -> 0.6 ms for 100 routers on Medium, beside upstream 2.0.3's 0.8-1.0).
const myRouterPage = firstPageStatements((db, p) => myRouters(db, p(0))(clientRouterRows(db) as never));

/** The same, enrolled or not: what the policies allow for a service (its router list, as sessions list them). */
const policyEdgeRouters: ResourceDecl = { ...clientEdgeRouters, detailQuery: (db) => clientRouterRows(db) as never };

export function registerServices(app: FastifyInstance, ctx: Ctx, api: 'client' | 'management') {
  if (api === 'management') {
    mountResource(app, ctx, services, { extraQuery: ConfigTypesQuery, view: viewer });
    return;
  }
  mountResource(app, ctx, services, {
    only: ['list', 'get', 'update', 'patch', 'delete'],
    extraQuery: ConfigTypesQuery,
    view: viewer,
    scope: visibleServices(ctx),
    access: { list: 'session', get: 'session' },
    listWithSession: serviceByName(ctx),
    firstPage: firstServicePage(ctx),
  });

  app.get(
    '/current-identity/edge-routers',
    { config: { access: 'session' }, schema: { operationId: 'getCurrentIdentityEdgeRouters', tags: ['Current Identity'], summary: 'The edge routers the caller may connect through', querystring: ListQuery, response: { 200: ListEnvelope(clientEdgeRouters.schemas.detail), ...errors(400, 401) } } },
    async (req) => {
      const p = principalOf(req);
      const query = req.query as ListParams;
      const limit = plainFirstPage(query);
      const first = limit ? await firstPageAnswer(ctx, clientEdgeRouters, limit, await all(ctx.store.db, myRouterPage(limit), [p.identityId])) : undefined;
      if (first) return listOf(first.items, first.pagination, filterableFields(clientEdgeRouters));
      // Enrolled ones in the scope too, not only in the rows read: the page and its count are of those.
      const { items, pagination } = await listResource(ctx, clientEdgeRouters, query, myRouters(ctx.store.db, p.identityId));
      return listOf(items, pagination, filterableFields(clientEdgeRouters));
    },
  );

  const RouterItem = Type.Object({ ...edgeRouterClientFields, urls: MapOf(Type.String()) });
  app.get(
    '/services/:id/edge-routers',
    {
      config: { access: 'session' },
      schema: {
        operationId: 'listServiceEdgeRouters', tags: ['Services'], summary: 'The edge routers the caller may use for a service', params: IdParams, querystring: ListQuery,
        headers: Type.Object({ 'session-token': Type.Optional(Type.String({ maxLength: 4096 })) }),
        response: { 200: Envelope(Type.Object({ edgeRouters: Type.Array(RouterItem) })), ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      const { id } = req.params as { id: string };
      const scope = visibleServices(ctx)(req);
      await parentExists(ctx, scope ? { ...services, source: (db) => scope(db.selectFrom('services as e') as never) } : services, id);
      await checkSessionToken(ctx.store.db, p.identityId, (req.headers as Record<string, string | undefined>)['session-token']);
      const routers = (q: AnyQuery) => q.where(idIn(sharedEdgeRouters(ctx.store.db, p.identityId, id)) as never);
      // The session form: no base fields, plus the routers' listener URLs. As upstream, one object (not a
      // page) with the routers the policies allow, enrolled or not, connected ones first, at most 25.
      const { items, pagination } = await listResource(ctx, { ...policyEdgeRouters, toDetail: (r) => r }, { ...(req.query as ListParams), limit: -1, offset: 0 }, routers);
      const rows = (Array.isArray(items) ? items : await collect(items)) as Row[];
      rows.sort((a, b) => Number(isOnline(b)) - Number(isOnline(a)) || Number(a.cost) - Number(b.cost) || String(a.name).localeCompare(String(b.name)));
      return { data: { edgeRouters: rows.slice(0, ROUTERS_PER_SESSION).map(sessionRouter) }, meta: listOf([], pagination, filterableFields(clientEdgeRouters)).meta };
    },
  );
}

