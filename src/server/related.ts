// Related lists: GET /parents/{id}/children, the children chosen by a subquery on the parent's id,
// with the usual filter, sort and paging.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { Ctx } from '../model/context.js';
import { listResource } from '../model/crud.js';
import { notFound } from '../model/errors.js';
import type { AnyQuery, ResourceDecl } from '../model/resource.js';
import { IdParams, ListEnvelope, ListQuery } from '../model/schemas/common.js';
import type { Db } from '../store/db.js';
import type { ListParams } from '../store/list.js';
import { errors, filterableFields } from './crud.js';
import { listOf } from './envelope.js';

export interface RelatedSpec {
  url: string;
  operationId: string;
  tags: string[];
  summary: string;
  /** The parent must exist (404 otherwise). */
  parent: { decl: ResourceDecl };
  decl: ResourceDecl;
  /** Narrow the children's list (aliased `e`) to those of the parent. */
  scope: (db: Db, parentId: string, req: FastifyRequest) => (q: AnyQuery) => AnyQuery;
  extraQuery?: Record<string, TSchema>;
  /** The declaration to render children with, for this request (default: spec.decl). */
  view?: (req: FastifyRequest) => ResourceDecl;
  access?: 'admin' | 'session';
}

export async function parentExists(ctx: Ctx, decl: ResourceDecl, id: string) {
  const source = decl.source ?? ((db: Db) => db.selectFrom(`${decl.table} as e` as never) as never);
  const found = await (source(ctx.store.db) as AnyQuery).select('e.id' as never).where('e.id' as never, '=', id as never).executeTakeFirst();
  if (!found) throw notFound(decl.name, id);
}

export function relatedList(app: FastifyInstance, ctx: Ctx, o: RelatedSpec) {
  app.get(
    o.url,
    {
      config: { access: o.access ?? 'admin' },
      schema: {
        operationId: o.operationId, tags: o.tags, summary: o.summary, params: IdParams,
        querystring: { ...ListQuery, properties: { ...ListQuery.properties, ...(o.extraQuery ?? {}) } },
        response: { 200: ListEnvelope(o.decl.schemas.detail), ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      await parentExists(ctx, o.parent.decl, id);
      const decl = o.view?.(req) ?? o.decl;
      const { items, pagination } = await listResource(ctx, decl, req.query as ListParams, o.scope(ctx.store.db, id, req));
      return listOf(items, pagination, filterableFields(o.decl));
    },
  );
}
