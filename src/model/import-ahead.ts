// The part of a SQLite import that runs ahead of its last transaction (import-model.ts, applyBatched):
// the new entities that grant nothing by themselves, created in short journaled transactions. It runs
// where the import runs: a large one on its own thread (import-thread.ts), a small one on the API thread.
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { Ctx } from './context.js';
import { createIn, writeTx } from './crud.js';
import { ApiError } from './errors.js';
import { fieldsOf, KINDS, nameKind, type Item, type Kind, type Names } from './export-import.js';
import { newId } from './ids.js';
import { BATCH_MS, noteCreated, type JournalNote } from './import-journal.js';

/**
 * Kinds whose new entities a SQLite import creates ahead, in short transactions: none of them lets
 * anyone in or grants anything by being there (an identity or router must enroll first; configs,
 * config types and posture checks are data that policies and services refer to).
 */
export const AHEAD = new Set(['configTypes', 'configs', 'postureChecks', 'identities', 'edgeRouters', 'transitRouters']);

/** A write the import will make, in plan order; `key` is the kind's document key. */
export interface AheadWork {
  key: string;
  action: 'create' | 'update' | 'delete';
  name: string;
  where: string;
  item?: Item;
  /** Not ahead even if its kind is (it takes the name of an entity the last transaction deletes). */
  last?: boolean;
}

export const kindOf = (key: string): Kind => KINDS.find((k) => k.key === key)!;

const ajv = addFormats.default(new Ajv.default({ allErrors: false, strict: false }));
const validators = new Map<Kind, ReturnType<typeof ajv.compile>>();

/** The document's item as the API's create body: names back to ids, checked against the create schema. */
export function toBody(k: Kind, item: Item, names: Names, where: string): Item {
  const body: Item = {};
  const fields = fieldsOf(k);
  const docFields = new Map(fields.map((f) => [k.refs?.[f]?.as || f, f]));
  for (const key of Object.keys(item)) {
    if (!docFields.has(key)) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: '${key}' is not a field of ${k.key} (fields: ${[...docFields.keys()].join(', ')})`);
  }
  for (const [docKey, f] of docFields) {
    if (!(docKey in item)) continue;
    const r = k.refs?.[f];
    body[f] = r ? r.toApi(item[docKey], names, where) : item[docKey];
  }
  let validate = validators.get(k);
  if (!validate) validators.set(k, (validate = ajv.compile(k.decl.schemas.create as object)));
  if (!validate(body)) {
    const e = validate.errors?.[0];
    throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: ${e?.instancePath ? `${e.instancePath.slice(1).replace(/\//g, '.')} ` : ''}${e?.message ?? 'is not valid'}`);
  }
  return body;
}

/** Errors of one entity's write name it (a unique name taken by an entity of another kind, say). */
export async function naming(ctx: Ctx, where: string, write: () => Promise<unknown>) {
  try {
    await write();
  } catch (err) {
    const field = ctx.store.dialect.uniqueViolation(err);
    if (field) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: its ${field} must be unique, and another entity already uses it`);
    if (err instanceof ApiError) throw new ApiError(err.status, err.code, `${where}: ${err.message}`, err.fieldCause, err.extra);
    throw err;
  }
}

export interface Ahead {
  /** Indexes in the work list of what the last transaction must do (everything not created ahead). */
  deferred: number[];
}

/**
 * Create AHEAD's kinds, a BATCH_MS transaction at a time, each entity noted in the run's journal in
 * the transaction that creates it; `between` runs after each commit (others' turn at the write lock).
 * `pace` gives the event loop a turn within a batch, where this runs on the API thread.
 */
export async function createAhead(ctx: Ctx, runId: string, work: AheadWork[], names: Names, o: { pace?: () => Promise<void> | undefined; between: () => Promise<void> }): Promise<Ahead> {
  const out: Ahead = { deferred: [] };
  let next = 0;
  let seq = 0;
  while (next < work.length) {
    const from = next;
    // Run again from the same place if writeTx retries the transaction.
    const made = await writeTx(
      ctx,
      async (tx) => {
        const start = performance.now();
        const notes: JournalNote[] = [];
        const deferred: number[] = [];
        let created = 0;
        let i = from;
        for (; i < work.length && performance.now() - start < BATCH_MS; i++) {
          // On the API thread, requests that need no database (/version) are answered within the batch too.
          await o.pace?.();
          const w = work[i];
          if (w.action !== 'create' || !AHEAD.has(w.key) || w.last) {
            deferred.push(i);
            continue;
          }
          const k = kindOf(w.key);
          const body = toBody(k, w.item!, names, w.where);
          // It refers to something the last transaction creates (a service, an auth policy): it waits for it.
          if (JSON.stringify(body).includes('"new:')) {
            deferred.push(i);
            continue;
          }
          const id = newId();
          await naming(ctx, w.where, () => createIn(tx, ctx, k.decl, body, id));
          // At once: a config later in this batch may name the config type just made.
          names.set(nameKind(k), id, w.name);
          notes.push({ kind: w.key, entityId: id });
          created++;
        }
        await noteCreated(tx, runId, seq, notes);
        return { next: i, deferred, created };
        // Its commit need not wait for the disk: a batch lost with a power cut goes with its notes, and
        // the last transaction's fsync makes all of them durable (the WAL is written in order).
      },
      { relaxed: true },
    );
    next = made.next;
    seq += made.created;
    out.deferred.push(...made.deferred);
    await o.between();
  }
  return out;
}
