// Generic create / read / update / delete over a resource declaration. Every write runs in one transaction.
import { sql } from 'kysely';
import type { Tx } from '../store/db.js';
import { indexRoleAttributes, indexTags, unindexEntity } from '../store/entity-index.js';
import { listPage, type ListParams, type ListSource, type Page, type Scope } from '../store/list.js';
import { first, precompile, type Precompiled } from '../store/precompiled.js';
import { touchServices } from './changes.js';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { ApiError, couldNotValidate, notFound } from './errors.js';
import { newId } from './ids.js';
import type { ResourceDecl, Row, WriteMode } from './resource.js';
import { evaluateEntity, forgetEntity } from './policy/membership.js';
import { applySetEdits, checkSetEdits, hasSetEdits, lockRow } from './set-edits.js';
import { afterCommit, collecting, publish, recordChange } from './events/record.js';
import { apiSessionDeleted, sessionDeleted } from './events/emit.js';
import type { ZtcEvent } from './events/types.js';

export function listSource(decl: ResourceDecl): ListSource {
  const source = decl.source ?? ((db) => db.selectFrom(`${decl.table} as e` as never) as never);
  return {
    filterable: decl.filterable,
    hasRoles: !!decl.roleAttributes,
    source,
    detailQuery: decl.detailQuery ?? ((db) => source(db).selectAll('e' as never) as never),
    rowsAreDetails: !decl.detailQuery,
  };
}

export type Detail = Record<string, unknown>;

/**
 * One page of a resource's list, as details. An unlimited list too large to hold at once comes as
 * chunks of details instead, each expanded on its own (see store/list.ts), for the response to stream.
 */
export async function listResource(ctx: Ctx, decl: ResourceDecl, params: ListParams, scope?: Scope): Promise<{ items: Detail[] | AsyncIterable<Detail[]>; pagination: Page['pagination'] }> {
  const src = listSource(decl);
  if (decl.filterableNow) src.filterable = { ...src.filterable, ...decl.filterableNow(ctx) };
  const page = await listPage(ctx.store.db, ctx.store.dialect, src, params, scope);
  const details = (rows: Row[]) => detailsOf(ctx, decl, rows);
  if (page.chunks) {
    const chunks = page.chunks;
    return { items: (async function* () { for await (const rows of chunks) yield await details(rows); })(), pagination: page.pagination };
  }
  return { items: await details(page.rows), pagination: page.pagination };
}

/** Rows of a resource's detail query as its details (expanded, then viewed): what a list answers. */
export async function detailsOf(ctx: Ctx, decl: ResourceDecl, rows: Row[]): Promise<Detail[]> {
  await decl.expand?.(ctx.store.db, rows, ctx);
  return rows.map((r) => decl.toDetail(r, ctx));
}

const byIdQueries = new WeakMap<ResourceDecl, Precompiled<Row>>();

export async function findRow(ctx: Ctx | { store: Ctx['store'] }, decl: ResourceDecl, id: string, tx?: Tx): Promise<Row | undefined> {
  let q = byIdQueries.get(decl);
  if (!q) {
    q = precompile((db, p) => listSource(decl).detailQuery(db).where(sql.ref('e.id'), '=', p(0)));
    byIdQueries.set(decl, q);
  }
  return first(tx ?? ctx.store.db, q, [id]);
}

/** 404 unless the row is among those the scope lets the caller see. */
export async function assertVisible(ctx: Ctx, decl: ResourceDecl, id: string, scope?: Scope) {
  if (!scope) return;
  const visible = await scope(listSource(decl).source(ctx.store.db), { pinned: true }).select(sql.ref('e.id').as('id')).where(sql.ref('e.id'), '=', id).executeTakeFirst();
  if (!visible) throw notFound(decl.name, id);
}

export async function getResource(ctx: Ctx, decl: ResourceDecl, id: string, scope?: Scope) {
  await assertVisible(ctx, decl, id, scope);
  const row = await findRow(ctx, decl, id);
  if (!row) throw notFound(decl.name, id);
  return detailOfRow(ctx, decl, row);
}

/** One row of the declaration's detail query, as its detail. */
export async function detailOfRow(ctx: Ctx, decl: ResourceDecl, row: Row) {
  await decl.expand?.(ctx.store.db, [row], ctx);
  return decl.toDetail(row, ctx);
}

/**
 * Run a write in one transaction. A transaction that lost a race with another controller is run again
 * (a few times, with jitter); a unique-constraint race becomes the same 400 the pre-checks give.
 * The events the write recorded are published once it committed (model/events/record.ts).
 */
export async function writeTx<T>(ctx: Ctx, fn: (tx: Tx) => Promise<T>, o: { relaxed?: boolean } = {}): Promise<T> {
  // relaxed: a commit that need not wait for the disk, where the store offers it (Store.relaxedWrite).
  const write = (o.relaxed && ctx.store.relaxedWrite) || ctx.store.write;
  for (let attempt = 1; ; attempt++) {
    const events: ZtcEvent[] = [];
    try {
      const out = await write((tx) => fn(collecting(tx, events)));
      publish(ctx, events);
      return out;
    } catch (err) {
      const field = ctx.store.dialect.uniqueViolation(err);
      if (field) throw couldNotValidate(field, 'must be unique: another entity already uses this value');
      if (attempt < 5 && ctx.store.dialect.retryable(err)) {
        await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
        continue;
      }
      throw err;
    }
  }
}

function tagsColumn(input: Row, mode: WriteMode): Row {
  if (mode === 'patch' && !('tags' in input)) return {};
  return { tags: JSON.stringify(input.tags ?? {}) };
}

/**
 * Empty strings in the declaration's blank-means-absent fields become null (see ResourceDecl.blankAsNull);
 * the fields upstream ignores are dropped (ResourceDecl.ignored).
 */
function withoutBlanks(decl: ResourceDecl, body: Row, mode: WriteMode): Row {
  const own = (decl.schemas[mode] as { properties?: Row } | undefined)?.properties ?? {};
  const ignored = decl.ignored ? Object.keys(decl.ignored).filter((f) => f in body && !(f in own)) : [];
  if (!ignored.length && !decl.blankAsNull?.some((f) => body[f] === '')) return body;
  const out = { ...body };
  for (const f of ignored) delete out[f];
  for (const f of decl.blankAsNull ?? []) if (out[f] === '') out[f] = null;
  return out;
}

export async function createResource(ctx: Ctx, decl: ResourceDecl, raw: Row) {
  const body = withoutBlanks(decl, raw, 'create');
  const input = decl.hooks?.prepare ? await decl.hooks.prepare(body, 'create', ctx) : body;
  return writeTx(ctx, (tx) => createIn(tx, ctx, decl, input, decl.idOf?.(input))).catch((err) => namedDuplicate(ctx, decl, input, err));
}

/**
 * A name already taken says by which entity (its id), so the caller can update or delete that one:
 * "a posture check named 'corp-domain' already exists (id ndpUCUWivV)".
 */
async function namedDuplicate(ctx: Ctx, decl: ResourceDecl, input: Row, err: unknown): Promise<never> {
  const name = input.name;
  if (err instanceof ApiError && err.code === 'COULD_NOT_VALIDATE' && err.fieldCause?.field === 'name' && typeof name === 'string') {
    const other = await ctx.store.db
      .selectFrom(decl.table as never)
      .select(sql.ref<string>('id').as('id'))
      .where(sql.ref('name'), '=', name)
      .executeTakeFirst()
      .catch(() => undefined);
    const noun = decl.name.replace(/-/g, ' ');
    if (other) throw couldNotValidate('name', `must be unique: ${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun} named '${name}' already exists (id ${(other as { id: string }).id})`, name);
  }
  throw err;
}

/**
 * One create inside a transaction the caller holds (several writes that succeed or fail together).
 * The input must already be valid for the create schema, and prepared when the declaration has a
 * `prepare` hook (slow work that must not run inside a transaction).
 */
export async function createIn(tx: Tx, ctx: Ctx, decl: ResourceDecl, input: Row, id = newId()): Promise<{ id: string } & Record<string, unknown>> {
  const now = iso(ctx.clock.now());
  const values = decl.toRow ? await decl.toRow(input, 'create', tx, ctx) : {};
  await tx
    .insertInto(decl.table)
    .values({ id, createdAt: now, updatedAt: now, ...tagsColumn(input, 'create'), ...values } as never)
    .execute();
  await indexEntity(tx, decl, id, input, 'create', ctx);
  const extra = (await decl.hooks?.afterCreate?.(tx, id, input, ctx)) ?? {};
  await decl.hooks?.afterWrite?.(tx, id, ctx, input, 'create');
  // The state recorded is the row as written (no read back: the write's own values are what changed).
  await recordChange(tx, ctx, decl, 'created', id, null, { id, createdAt: now, updatedAt: now, ...tagsColumn(input, 'create'), ...values });
  return { id, ...extra };
}

export async function updateResource(
  ctx: Ctx,
  decl: ResourceDecl,
  id: string,
  raw: Row,
  mode: 'update' | 'patch',
  /** Extra condition on the existing row (ownership, method); a failing check throws. */
  check?: (existing: Row) => void | Promise<void>,
) {
  const body = withoutBlanks(decl, raw, mode);
  const edits = mode === 'patch' && hasSetEdits(body);
  if (edits) checkSetEdits(decl, body);
  const prepared = decl.hooks?.prepare ? await decl.hooks.prepare(body, mode, ctx) : body;
  await writeTx(ctx, async (tx) => {
    if (edits) await lockRow(tx, ctx.store.dialect.name, decl.table, id);
    await updateIn(tx, ctx, decl, id, prepared, mode, check, edits);
  }).catch((err) => namedDuplicate(ctx, decl, prepared, err));
}

/** One update inside a transaction the caller holds (input validated, and prepared as for createIn). */
export async function updateIn(tx: Tx, ctx: Ctx, decl: ResourceDecl, id: string, prepared: Row, mode: 'update' | 'patch', check?: (existing: Row) => void | Promise<void>, edits = false) {
  const existing = await findRow(ctx, decl, id, tx);
  if (!existing) throw notFound(decl.name, id);
  await check?.(existing);
  // Role attribute and tag edits (our extension) become whole lists from the row as it is now.
  const input = edits ? applySetEdits(decl, prepared, existing) : prepared;
  const values = decl.toRow ? await decl.toRow(input, mode, tx, ctx, existing) : {};
  const changed = { updatedAt: iso(ctx.clock.now()), ...tagsColumn(input, mode), ...values };
  await tx
    .updateTable(decl.table)
    .set(changed as never)
    .where('id', '=', id)
    .execute();
  await indexEntity(tx, decl, id, input, mode, ctx);
  await decl.hooks?.afterWrite?.(tx, id, ctx, input, mode);
  await recordChange(tx, ctx, decl, 'updated', id, existing, { ...existing, ...changed });
}

/**
 * Tags and role attributes also go to their indexes (store/entity-index.ts), and the entity's policy
 * membership is recomputed (model/policy/membership.ts), all in the same transaction.
 */
async function indexEntity(tx: Tx, decl: ResourceDecl, id: string, input: Row, mode: WriteMode, ctx: Ctx) {
  const fresh = mode === 'create';
  if (mode !== 'patch' || 'tags' in input) await indexTags(tx, id, input.tags, fresh);
  const roles = decl.roleAttributes;
  // A new entity that moves no service marker takes the membership lock shared (policy/membership.ts).
  const created = { fresh, lock: fresh && !decl.touchesServices ? (ctx.store.dialect.name === 'postgres' ? 'shared' : 'none') : 'exclusive' } as const;
  if (roles && (mode !== 'patch' || roles in input)) {
    await indexRoleAttributes(tx, id, input[roles], fresh);
    if (decl.policySide) {
      await evaluateEntity(tx, decl.policySide, id, [...new Set((input[roles] as string[] | null) ?? [])], created);
      if (mode !== 'create') await touchServices(tx, ctx);
    }
  } else if (decl.policySide && mode === 'create') {
    await evaluateEntity(tx, decl.policySide, id, [], created);
  }
  if (decl.touchesServices) await touchServices(tx, ctx);
}

export async function deleteResource(ctx: Ctx, decl: ResourceDecl, id: string) {
  await writeTx(ctx, (tx) => deleteIn(tx, ctx, decl, id));
}

/** One delete inside a transaction the caller holds. */
export async function deleteIn(tx: Tx, ctx: Ctx, decl: ResourceDecl, id: string) {
  const existing = await findRow(ctx, decl, id, tx);
  if (!existing) throw notFound(decl.name, id);
  await decl.hooks?.beforeDelete?.(tx, existing, ctx);
  await unindexEntity(tx, id);
  await forgetEntity(tx, id);
  if (decl.touchesServices || decl.policySide) await touchServices(tx, ctx);
  const res = await tx.deleteFrom(decl.table).where('id', '=', id).executeTakeFirst();
  // Another transaction deleted it first: it is gone, as a later request would be told.
  if (Number(res.numDeletedRows) !== 1) throw notFound(decl.name, id);
  await recordChange(tx, ctx, decl, 'deleted', id, existing, null);
  if (decl.table === 'sessions') afterCommit(tx, ctx, sessionDeleted(ctx, existing));
  else if (decl.table === 'apiSessions') afterCommit(tx, ctx, apiSessionDeleted(ctx, existing));
}

/**
 * A write made outside updateIn (an action route: disable, enable, remove MFA) recorded as an update of
 * the entity, with its row before and after `fn`, named by `action`.
 */
export async function asUpdate<T>(tx: Tx, ctx: Ctx, decl: ResourceDecl, id: string, action: string, fn: () => Promise<T>): Promise<T> {
  const before = await findRow(ctx, decl, id, tx);
  if (!before) throw notFound(decl.name, id);
  const out = await fn();
  await recordChange(tx, ctx, decl, 'updated', id, before, (await findRow(ctx, decl, id, tx)) ?? null, action);
  return out;
}
