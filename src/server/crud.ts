// Mounts a resource declaration as its standard routes: list, create, detail, update, patch, delete.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { Type, type TSchema } from 'typebox';
import type { Ctx } from '../model/context.js';
import { assertVisible, createResource, deleteResource, detailsOf, getResource, listResource, updateResource } from '../model/crud.js';
import { selfLink, type AnyQuery, type Operation, type ResourceDecl, type Row } from '../model/resource.js';
import type { Access, WithSession } from './plugins/auth.js';
import { CreateLocation, Empty, Envelope, ErrorBody, IdParams, ListEnvelope, ListQuery } from '../model/schemas/common.js';
import type { Db } from '../store/db.js';
import { resolvePaging, type ListParams, type Page, type Scope } from '../store/list.js';
import { precompile, type Params, type Precompiled } from '../store/precompiled.js';
import { foldKeys } from './case-fold.js';
import { actorCtx } from './actor.js';
import { empty, listOf, ok } from './envelope.js';
import { patchWithSetEdits, takesSetEdits } from '../model/set-edits.js';
import { IGNORES_UNKNOWN_FIELDS } from './schema-compilers.js';

const pascal = (s: string) => s.replace(/(^|[\s-])(\w)/g, (_, __, c: string) => c.toUpperCase());

/** Upstream's operation ids: listIdentities, createIdentity, detailIdentity, ... */
export const opIds = (decl: ResourceDecl) => {
  const one = pascal(decl.name);
  const many = pascal(decl.plural);
  return { list: `list${many}`, create: `create${one}`, get: `detail${one}`, update: `update${one}`, patch: `patch${one}`, delete: `delete${one}` };
};

export const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, ErrorBody]));

/** Upstream's symbol names for the list (aliases we also accept are left out). */
export function filterableFields(decl: Pick<ResourceDecl, 'filterable'>): string[] {
  return Object.entries(decl.filterable).filter(([, f]) => !f.alias).map(([name]) => name);
}

const RoleQuery = {
  roleFilter: Type.Optional(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100, description: 'roles: #attribute, @id or #all' })),
  roleSemantic: Type.Optional(Type.Union([Type.Literal('AllOf'), Type.Literal('AnyOf')])),
};

export interface MountOptions {
  extraQuery?: Record<string, TSchema>;
  /** The declaration as this request's caller sees it (what expand adds depends on who asks). */
  view?: (req: FastifyRequest) => ResourceDecl;
  /** The rows this request's caller may see (list and get); others are 404. */
  scope?: (req: FastifyRequest) => Scope | undefined;
  /** Mount only these of the declaration's operations. */
  only?: Operation[];
  /** Who may call each operation (default: admins). */
  access?: Partial<Record<Operation, Access>>;
  /**
   * A list some requests of which are read with the caller's API session in one statement (see
   * plugins/auth.ts withSession): `answer` makes the page from what `read` returned.
   */
  listWithSession?: { read: WithSession; answer: (req: FastifyRequest, read: unknown) => Promise<{ items: unknown[]; pagination: Page['pagination'] }> };
  /**
   * A first page with nothing else asked (plainFirstPage), read by a statement compiled once: the rows
   * of the view's detail query that the caller may see, by id, one more than `limit` (a longer list
   * takes the general path, which counts it); undefined to take the general path.
   */
  firstPage?: (req: FastifyRequest, limit: number) => Promise<Row[] | undefined>;
}

/**
 * The page size when a list's query asks for a first page and nothing else (`allowed`: the route's own
 * keys that do not change which rows are listed); undefined otherwise. What SDKs ask, as they start.
 */
export function plainFirstPage(query: ListParams, allowed: string[] = []): number | undefined {
  if (Object.keys(query).some((k) => k !== 'limit' && k !== 'offset' && !allowed.includes(k)) || (query.offset !== undefined && query.offset !== 0)) return undefined;
  const { limit } = resolvePaging(query, {});
  return limit === 'none' ? undefined : limit;
}

/**
 * A first page's statement for each page size, compiled once: `rows` (the rows the caller may see,
 * `e` the resource's table) by id, one more than the page, as firstPageAnswer takes them.
 */
export function firstPageStatements(rows: (db: Db, p: Params) => AnyQuery): (limit: number) => Precompiled<Row> {
  const byLimit = new Map<number, Precompiled<Row>>();
  return (limit) => {
    let q = byLimit.get(limit);
    if (!q) byLimit.set(limit, (q = precompile((db, p) => rows(db, p).orderBy(sql.ref('e.id'), 'asc').limit(sql.lit(limit + 1)) as never)));
    return q;
  };
}

/** A first page's rows (see MountOptions.firstPage) as the list's answer, when they are the whole list. */
export async function firstPageAnswer(ctx: Ctx, decl: ResourceDecl, limit: number, rows: Row[] | undefined) {
  if (!rows || rows.length > limit) return undefined;
  return { items: await detailsOf(ctx, decl, rows), pagination: { limit, offset: 0, totalCount: rows.length } };
}

export function mountResource(app: FastifyInstance, ctx: Ctx, decl: ResourceDecl, opts: MountOptions = {}) {
  let extraQuery = opts.extraQuery ?? {};
  if (decl.roleAttributes) extraQuery = { ...RoleQuery, ...extraQuery };
  const view = (req: FastifyRequest) => opts.view?.(req) ?? decl;
  const ids = opIds(decl);
  const tags = [pascal(decl.plural).replace(/([a-z])([A-Z])/g, '$1 $2')];
  const base = `/${decl.plural}`;
  const has = (op: ResourceDecl['ops'][number]) => decl.ops.includes(op) && (!opts.only || opts.only.includes(op));
  const config = (op: Operation) => ({ access: opts.access?.[op] ?? ('admin' as const) });
  const fields = filterableFields(decl);

  if (has('list')) {
    const withSession = opts.listWithSession;
    app.get(base, {
      config: { ...config('list'), ...(withSession ? { withSession: withSession.read } : {}) },
      schema: {
        operationId: ids.list, tags, summary: `List ${decl.plural}`,
        querystring: { ...ListQuery, properties: { ...ListQuery.properties, ...extraQuery } },
        response: { 200: ListEnvelope(decl.schemas.detail), ...errors(400, 401) },
      },
      handler: async (req) => {
        const query = req.query as ListParams;
        const limit = opts.firstPage && plainFirstPage(query, Object.keys(opts.extraQuery ?? {}));
        const first = limit ? await firstPageAnswer(ctx, view(req), limit, await opts.firstPage!(req, limit)) : undefined;
        const { items, pagination } =
          first ?? (withSession && req.prefetched !== undefined ? await withSession.answer(req, req.prefetched) : await listResource(ctx, view(req), query, opts.scope?.(req)));
        return listOf(items, pagination, fields);
      },
    });
  }
  // Keys upstream's Go decoding would match whatever their case: renamed before validation.
  const conflicts = (op: 'create' | 'update' | 'delete') => (decl.conflictsOn?.includes(op) ? [409] : []);
  const keys = decl.caseInsensitiveKeys;
  const folding = keys ? { preValidation: async (req: { body: unknown }) => void (req.body = foldKeys(req.body, keys)) } : {};
  if (has('create') && decl.schemas.create) {
    app.post(base, {
      ...folding,
      // Undeclared fields are dropped, as upstream's decoding drops them (schema-compilers.ts).
      config: { ...config('create'), ...IGNORES_UNKNOWN_FIELDS },
      schema: { operationId: ids.create, tags, summary: `Create ${article(decl.name)}`, body: withIgnored(decl, decl.schemas.create), response: { 201: Envelope(CreateLocation), ...errors(400, 401, ...conflicts('create')) } },
      handler: async (req, reply) => {
        const created = await createResource(actorCtx(ctx, req), decl, req.body as Row);
        reply.code(201);
        return ok({ ...created, _links: selfLink(decl.plural, created.id) });
      },
    });
  }
  if (has('get')) {
    app.get(`${base}/:id`, {
      config: config('get'),
      schema: { operationId: ids.get, tags, summary: `Retrieve one ${decl.name}`, params: IdParams, ...(opts.extraQuery ? { querystring: Type.Object(opts.extraQuery) } : {}), response: { 200: Envelope(decl.schemas.detail), ...errors(401, 404) } },
      handler: async (req) => ok(await getResource(ctx, view(req), (req.params as { id: string }).id, opts.scope?.(req))),
    });
  }
  for (const mode of ['update', 'patch'] as const) {
    const upstreamBody = withIgnored(decl, decl.schemas[mode]);
    if (!has(mode) || !upstreamBody) continue;
    const body = mode === 'patch' && takesSetEdits(decl) ? patchWithSetEdits(upstreamBody) : upstreamBody;
    app.route({
      method: mode === 'update' ? 'PUT' : 'PATCH',
      url: `${base}/:id`,
      ...folding,
      config: { ...config(mode), ...IGNORES_UNKNOWN_FIELDS },
      schema: {
        operationId: ids[mode], tags, summary: mode === 'update' ? `Replace every field of ${article(decl.name)}` : `Change the given fields of ${article(decl.name)}`,
        params: IdParams, body, response: { 200: Envelope(Empty), ...errors(400, 401, 404, ...conflicts('update')) },
      },
      handler: async (req) => {
        await assertVisible(ctx, decl, (req.params as { id: string }).id, opts.scope?.(req));
        await updateResource(actorCtx(ctx, req), decl, (req.params as { id: string }).id, req.body as Row, mode);
        return empty();
      },
    });
  }
  if (has('delete')) {
    app.delete(`${base}/:id`, {
      config: config('delete'),
      schema: { operationId: ids.delete, tags, summary: `Delete ${article(decl.name)}`, params: IdParams, response: { 200: Envelope(Empty), ...errors(400, 401, 404, ...conflicts('delete')) } },
      handler: async (req) => {
        await assertVisible(ctx, decl, (req.params as { id: string }).id, opts.scope?.(req));
        await deleteResource(actorCtx(ctx, req), decl, (req.params as { id: string }).id);
        return empty();
      },
    });
  }
}

/** A write body that also takes the fields upstream ignores (ResourceDecl.ignored), documented as such. */
function withIgnored(decl: ResourceDecl, body: TSchema | undefined): TSchema | undefined {
  const properties = (body as { properties?: Record<string, TSchema> } | undefined)?.properties;
  if (!body || !decl.ignored || !properties) return body;
  const extra = Object.fromEntries(Object.entries(decl.ignored).filter(([k]) => !(k in properties)).map(([k, s]) => [k, Type.Optional({ ...s, description: 'Accepted and ignored, as upstream does (its clients send it)' })]));
  return { ...body, properties: { ...extra, ...properties } } as TSchema;
}

const article = (name: string) => (/^[aeiou]/i.test(name) ? `an ${name}` : `a ${name}`);
