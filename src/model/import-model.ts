// POST /import: make the controller match a document from GET /export (creates, updates, and deletes
// with prune), with the plan of what it does (or would do, on a dry run).
//
// Sized for models of a million entities: the controller's entities are read a page at a time and
// only those the document names are kept (as document items), so memory follows the document, not
// the database; the plan lists its first PLAN_LISTED steps and counts the rest. A large import into
// SQLite runs all of this on a thread of its own (import-thread.ts); on the API thread (small imports,
// PostgreSQL) every long loop gives the event loop a turn now and then (pace.ts), so other clients are
// answered meanwhile. It stays all-or-nothing: on PostgreSQL one transaction, rolled back on the first error;
// on SQLite, whose one write lock a long transaction would keep from every login, the new entities
// that grant nothing by themselves are created ahead in short transactions, journaled, and undone on
// failure or after a crash (applyBatched, import-journal.ts). What a reader sees meanwhile: docs/model.md.
import { sql } from 'kysely';
import type { Tx } from '../store/db.js';
import type { Ctx } from './context.js';
import { createIn, deleteIn, listResource, updateIn, writeTx } from './crud.js';
import { ApiError } from './errors.js';
import { allNames, embeddedRouters, KINDS, nameKind, toDocItem, type Item, type Kind, type Names } from './export-import.js';
import { pacer } from './pace.js';
import { edgeRouters, transitRouters } from './resources/routers.js';
import { createAhead, naming as namingIn, toBody, type AheadWork } from './import-ahead.js';
import { beginImportRun, finishImportRun, forgetImportRun, nextTurn, undoImportRun } from './import-journal.js';

/** Steps the answer lists; beyond them it says how many more there are (a plan of a million steps is not an answer). */
export const PLAN_LISTED = 1000;
/** Writes after which an import on PostgreSQL refreshes the planner's statistics itself. */
const ANALYZE_AFTER = 1000;

export interface PlanStep {
  action: 'create' | 'update' | 'delete';
  kind: string;
  name: string;
  /** For updates: the fields that change, with the value now and the value wanted. */
  changes?: { field: string; from: unknown; to: unknown }[];
}

export interface ImportResult {
  plan: PlanStep[];
  applied: boolean;
  /** Steps not listed in `plan` (only when there are any), and the count of each action. */
  omitted?: number;
  counts?: Record<PlanStep['action'], number>;
}

const same = (a: unknown, b: unknown) => JSON.stringify(normalise(a)) === JSON.stringify(normalise(b));
/** Role attributes and policy roles are sets (the API returns them sorted): their order is no change. */
const isSetField = (field: string) => field === 'roleAttributes' || field.endsWith('Roles');
const asSet = (v: unknown) => (Array.isArray(v) ? [...v].sort() : v);
const sameField = (field: string, a: unknown, b: unknown) => (isSetField(field) ? same(asSet(a), asSet(b)) : same(a, b));
function normalise(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalise);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, normalise(x)]));
  return v === undefined ? null : v;
}

/** One entity the document names, as it is now. */
interface Existing {
  id: string;
  system: boolean;
  /** The entity as a document item (what the document's item is compared with and merged over). */
  now: Item;
}

/** A write the import will make, in plan order. */
interface Work {
  k: Kind;
  action: PlanStep['action'];
  name: string;
  where: string;
  item?: Item;
  id?: string;
  now?: Item;
}

/**
 * The entities of one kind that the document names (and, with prune, the ids and names of the others),
 * read a page at a time: the details of entities the document does not name are never kept.
 */
async function existingOf(ctx: Ctx, k: Kind, named: Map<string, unknown>, names: Names, skip: Set<string>, pace: () => Promise<void> | undefined, prune: boolean) {
  const found = new Map<string, Existing>();
  const others: { id: string; name: string }[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = (await listResource(ctx, k.decl, { limit: 500, offset, sort: 'name asc' })).items as Item[];
    for (const d of page) {
      await pace();
      const id = String(d.id);
      if (skip.has(id)) continue;
      const name = String(d.name);
      const system = !!k.system?.(d);
      if (named.has(name)) found.set(name, { id, system, now: toDocItem(k, d, names) });
      else if (prune && !system) others.push({ id, name });
    }
    if (page.length < 500) return { found, others };
  }
}

export interface ImportOptions {
  dryRun?: boolean;
  prune?: boolean;
  /** Other work's turn inside long loops: on the API thread (the default) a pacer (pace.ts); on the import's thread, none. */
  pace?: () => Promise<void> | undefined;
  /** Between SQLite's batches (the others' turn at the write lock): the next turn of the event loop unless told. */
  between?: () => Promise<void>;
  /** Told the journal's run id as soon as it exists (the import's thread tells the API thread, which undoes it if the thread dies). */
  onRun?: (runId: string) => void;
}

/**
 * Make the controller match the document: the plan, and (unless a dry run) its application, all or
 * nothing. Without prune, entities the document does not name are left alone. Large SQLite imports
 * run this on a thread of their own (import-thread.ts).
 */
export async function importModel(ctx: Ctx, doc: unknown, o: ImportOptions): Promise<ImportResult> {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new ApiError(400, 'COULD_NOT_VALIDATE', 'The document must be an object with a list per kind (what GET /export answers)');
  const d = doc as Record<string, unknown>;
  const known = new Set(['ztcModel', ...KINDS.map((k) => k.key)]);
  const unknown = Object.keys(d).filter((key) => !known.has(key));
  if (unknown.length) throw new ApiError(400, 'COULD_NOT_VALIDATE', `Unknown kind${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `'${u}'`).join(', ')}: the document holds ${KINDS.map((k) => k.key).join(', ')}`);
  if (d.ztcModel !== undefined && d.ztcModel !== 1) throw new ApiError(400, 'COULD_NOT_VALIDATE', `ztcModel ${String(d.ztcModel)} is not a version this controller reads (1)`);

  const pace = o.pace ?? pacer();
  const names = await allNames(ctx);
  const embedded = await embeddedRouters(ctx);
  // The transit router list holds every router (as upstream's does): edge routers are planned as such.
  const edge = new Set((await ctx.store.db.selectFrom('routers').select('id').where('isEdge', '=', 1).execute()).map((r) => r.id));

  // The document's shape, and the names of what it creates, before any comparison (for references).
  const items = new Map<Kind, Map<string, Item>>();
  for (const k of KINDS) {
    const raw = d[k.key] ?? [];
    if (!Array.isArray(raw)) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${k.key} must be a list`);
    const byName = new Map<string, Item>();
    for (let i = 0; i < raw.length; i++) {
      await pace();
      const item = raw[i] as unknown;
      const where = `${k.key}[${i}]`;
      if (!item || typeof item !== 'object' || typeof (item as Item).name !== 'string') throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where} must be an object with a name`);
      const name = (item as Item).name as string;
      if (byName.has(name)) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where} '${name}': '${name}' appears twice in ${k.key}`);
      byName.set(name, item as Item);
      if (!names.has(nameKind(k), name)) names.set(nameKind(k), `new:${k.key}:${name}`, name);
    }
    items.set(k, byName);
  }

  const plan: PlanStep[] = [];
  const counts = { create: 0, update: 0, delete: 0 };
  const note = (step: PlanStep) => {
    counts[step.action]++;
    if (plan.length < PLAN_LISTED) plan.push(step);
  };
  // Kept only when the import is applied: a dry run checks each item as it goes and forgets it.
  const work: Work[] = [];
  for (const k of KINDS) {
    const byName = items.get(k)!;
    const skip = k.decl === edgeRouters ? embedded : k.decl === transitRouters ? new Set([...edge, ...embedded]) : new Set<string>();
    const { found, others } = await existingOf(ctx, k, byName, names, skip, pace, !!o.prune);
    let i = 0;
    for (const [name, wanted] of byName) {
      await pace();
      const where = `${k.key}[${i++}] '${name}'`;
      const there = found.get(name);
      if (there?.system) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: '${name}' is a system ${k.decl.name}, which import leaves alone: remove it from the document`);
      if (!there) {
        note({ action: 'create', kind: k.key, name });
        if (o.dryRun) toBody(k, wanted, names, where);
        else work.push({ k, action: 'create', name, where, item: wanted });
        continue;
      }
      const changes = Object.keys(wanted).filter((f) => !sameField(f, there.now[f], wanted[f])).map((f) => ({ field: f, from: there.now[f] ?? null, to: wanted[f] }));
      const fixed = changes.find((c) => k.fixed?.includes(c.field));
      if (fixed) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: the ${fixed.field} of ${k.decl.name} '${name}' cannot change (${JSON.stringify(fixed.from)} to ${JSON.stringify(fixed.to)}): delete it, or rename it in the document`);
      if (!changes.length) continue;
      note({ action: 'update', kind: k.key, name, changes });
      if (o.dryRun) toBody(k, { ...there.now, ...wanted }, names, where);
      else work.push({ k, action: 'update', name, where, item: wanted, id: there.id, now: there.now });
    }
    for (const e of others) {
      note({ action: 'delete', kind: k.key, name: e.name });
      if (!o.dryRun) work.push({ k, action: 'delete', name: e.name, where: `${k.key} '${e.name}'`, id: e.id });
    }
  }
  const total = counts.create + counts.update + counts.delete;
  const result = (applied: boolean): ImportResult => ({ plan, applied, ...(total > plan.length ? { omitted: total - plan.length, counts } : {}) });
  if (o.dryRun || !total) return result(false);

  const naming = (where: string, write: () => Promise<unknown>) => namingIn(ctx, where, write);
  const create = async (tx: Tx, w: Work, body: Item, id?: string) => {
    await naming(w.where, async () => names.set(nameKind(w.k), (await createIn(tx, ctx, w.k.decl, body, id)).id, w.name));
  };
  /** The writes in plan order, in the caller's transaction: deletes first, dependants before what they depend on. */
  const applyAll = async (tx: Tx, list: Work[]) => {
    for (let j = list.length - 1; j >= 0; j--) {
      const w = list[j];
      if (w.action !== 'delete') continue;
      await pace();
      await naming(w.where, () => deleteIn(tx, ctx, w.k.decl, w.id!));
    }
    for (const w of list) {
      if (w.action === 'delete') continue;
      await pace();
      if (w.action === 'create') await create(tx, w, toBody(w.k, w.item!, names, w.where));
      else {
        // An update restates the whole entity (PUT), from the document's fields over the current ones.
        const body = toBody(w.k, { ...w.now, ...w.item }, names, w.where);
        const allowed = (w.k.decl.schemas.update as { properties?: Item } | undefined)?.properties ?? {};
        for (const f of Object.keys(body)) if (!(f in allowed)) delete body[f];
        await naming(w.where, () => updateIn(tx, ctx, w.k.decl, w.id!, body, 'update'));
      }
    }
  };
  // PostgreSQL locks rows, not the database: one transaction keeps the import atomic and lets logins
  // and other writes through meanwhile.
  if (ctx.store.dialect.name !== 'sqlite') {
    await writeTx(ctx, (tx) => applyAll(tx, work));
    // PostgreSQL plans by its statistics, which autovacuum refreshes about a minute later: until then
    // the clients' calls on a freshly imported model ran on the empty tables' estimates (a client's
    // edge router list 4.4 ms where 0.6). An analyze reads a sample of each table, on the server.
    if (total >= ANALYZE_AFTER) await sql`analyze`.execute(ctx.store.db);
    return result(true);
  }
  await applyBatched(ctx, work, names, { pace, between: o.between ?? nextTurn, onRun: o.onRun }, applyAll);
  return result(true);
}

/**
 * SQLite has one write lock, and a transaction holding it for the whole of a 100,000-identity import
 * made every login wait for its commit (33 s). So the creates of import-ahead.ts's AHEAD kinds are made
 * first, a BATCH_MS transaction at a time with other requests' turns between, each noted in the
 * import's journal (import-journal.ts): for a large import on its own thread (import-thread.ts), with
 * a pause between batches for the API thread's writes; for a small one on the API thread, yielding
 * every few ms (pace.ts). Everything else (updates; services, policies, signers, auth
 * policies and CAs, and what refers to one of them being created) then goes in one last transaction
 * that also ends the journal. A failure anywhere undoes what the batches made; a crash is undone at
 * the next start. docs/operations.md says what readers see meanwhile.
 */
async function applyBatched(
  ctx: Ctx,
  work: Work[],
  names: Names,
  turns: { pace: () => Promise<void> | undefined; between: () => Promise<void>; onRun?: (runId: string) => void },
  applyAll: (tx: Tx, list: Work[]) => Promise<void>,
) {
  const runId = await beginImportRun(ctx);
  turns.onRun?.(runId);
  try {
    // Deletes (prune) go in the last transaction, never ahead: undoing one would mean re-creating what
    // it cascaded to. A new entity taking the name of one deleted (an edge router replaced by a transit
    // router of that name: one table) waits for the last transaction too, after the delete.
    const freed = new Set(work.filter((w) => w.action === 'delete').map((w) => `${w.k.decl.table}\0${w.name}`));
    const plain: AheadWork[] = work.map((w) => ({ key: w.k.key, action: w.action, name: w.name, where: w.where, item: w.item, ...(freed.has(`${w.k.decl.table}\0${w.name}`) ? { last: true } : {}) }));
    const ahead = await createAhead(ctx, runId, plain, names, turns);
    const last = ahead.deferred.map((i) => work[i]);
    await writeTx(ctx, async (tx) => {
      await applyAll(tx, last);
      await finishImportRun(ctx, tx, runId);
    });
  } catch (err) {
    const left = await undoImportRun(ctx, runId).catch(() => undefined);
    if (left?.length && err instanceof ApiError) {
      throw new ApiError(err.status, err.code, `${err.message} (the import was undone, except ${left.length} entities that others now depend on: ${left.slice(0, 5).join(', ')})`, err.fieldCause, err.extra);
    }
    throw err;
  }
  // Done: the rest is bookkeeping. Notes it cannot forget now (the store closing) go at the next start.
  await forgetImportRun(ctx, runId).catch(() => undefined);
}
