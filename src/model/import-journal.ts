// The journal that keeps a batched import all-or-nothing (SQLite: see import-model.ts for why it is
// batched). An import run is a row in import_runs (with the pid of the process applying it); each
// entity it creates is noted in import_journal in the same transaction that creates it. The run's last
// transaction marks it finished, which is the moment the import is done; its notes are forgotten after,
// a few thousand a transaction (deleting 100,000 in the last one held the write lock for a second, which
// every login then waited for). A run that fails is undone at
// once; one whose process died (SIGKILL, power loss) is undone when the data dir is next opened, before
// anything is served. Undoing deletes what the notes name, newest first, a short transaction at a time,
// and a note goes in the same transaction as its entity's delete, so an undo interrupted by another
// crash goes on where it stopped.
import { sql } from 'kysely';
import type { Tx } from '../store/db.js';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { deleteIn, writeTx } from './crud.js';
import { ApiError } from './errors.js';
import { KINDS } from './export-import.js';
import { newId } from './ids.js';
import { processAlive } from './maintenance/integrity.js';
import { pacer } from './pace.js';

/**
 * A transaction of a batched import (or of its undo) lasts about this long: what a login may wait for.
 * Each commit costs some 10 ms (fsync, checkpoints) on the development machine: at 50 ms the import
 * takes about a fifth longer than in one transaction; at 25 ms, half as long again.
 */
export const BATCH_MS = 50;

/** Let the requests that arrived meanwhile in (their reads and writes queue for the connection behind this). */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface JournalNote {
  kind: string;
  entityId: string;
}

export async function beginImportRun(ctx: Ctx): Promise<string> {
  const id = newId();
  await writeTx(ctx, (tx) => tx.insertInto('importRuns').values({ id, pid: process.pid, startedAt: iso(ctx.clock.now()) }).execute());
  return id;
}

/** Note the entities one batch created, in the batch's transaction; `seq` numbers them in creation order. */
export async function noteCreated(tx: Tx, runId: string, firstSeq: number, notes: JournalNote[]) {
  // A few hundred rows per statement stays well under SQLite's limit on bound values.
  for (let i = 0; i < notes.length; i += 500) {
    await tx
      .insertInto('importJournal')
      .values(notes.slice(i, i + 500).map((n, j) => ({ importId: runId, seq: firstSeq + i + j, kind: n.kind, entityId: n.entityId })))
      .execute();
  }
}

/** In the import's last transaction: from its commit on, what the run created stays. */
export async function finishImportRun(ctx: Ctx, tx: Tx, runId: string) {
  await tx.updateTable('importRuns').set({ finishedAt: iso(ctx.clock.now()) }).where('id', '=', runId).execute();
}

/** Notes a transaction forgets: about BATCH_MS of deletes. */
const FORGET_NOTES = 5_000;

/** Delete a finished run's notes, then the run, a short transaction at a time. */
export async function forgetImportRun(ctx: Ctx, runId: string) {
  for (;;) {
    const done = await writeTx(ctx, async (tx) => {
      const first = await tx.selectFrom('importJournal').select('seq').where('importId', '=', runId).orderBy('seq').limit(1).executeTakeFirst();
      if (!first) {
        await tx.deleteFrom('importRuns').where('id', '=', runId).execute();
        return true;
      }
      await tx.deleteFrom('importJournal').where('importId', '=', runId).where('seq', '<', first.seq + FORGET_NOTES).execute();
      return false;
    });
    if (done) return;
    await nextTurn();
  }
}

/**
 * Delete, newest first, what the run created, then the run. Answers the entities that could not be
 * deleted (another client made something depend on them meanwhile, which deleting them would break):
 * those stay, and are named so that someone can look.
 */
export async function undoImportRun(ctx: Ctx, runId: string): Promise<string[]> {
  // Finished (its last transaction committed, its thread failing only after): nothing is undone.
  const run = await ctx.store.db.selectFrom('importRuns').select('finishedAt').where('id', '=', runId).executeTakeFirst();
  if (run?.finishedAt) {
    await forgetImportRun(ctx, runId);
    return [];
  }
  const kinds = new Map(KINDS.map((k) => [k.key, k]));
  const left: string[] = [];
  for (;;) {
    const more = await writeTx(ctx, async (tx) => {
      const start = performance.now();
      const pace = pacer();
      const kept: string[] = [];
      for (;;) {
        const notes = await tx.selectFrom('importJournal').select(['seq', 'kind', 'entityId']).where('importId', '=', runId).orderBy('seq', 'desc').limit(50).execute();
        if (!notes.length) break;
        for (const n of notes) {
          await pace();
          const k = kinds.get(n.kind);
          if (k) {
            // Each delete in its own savepoint: one that cannot be made leaves the others undone.
            await sql`savepoint undo_one`.execute(tx);
            try {
              await deleteIn(tx, ctx, k.decl, n.entityId);
              await sql`release undo_one`.execute(tx);
            } catch (err) {
              await sql`rollback to undo_one`.execute(tx);
              await sql`release undo_one`.execute(tx);
              // Already deleted by someone else: nothing left to undo.
              if (!(err instanceof ApiError && err.status === 404)) kept.push(`${k.decl.name} ${n.entityId} (${err instanceof Error ? err.message : String(err)})`);
            }
          }
        }
        await tx.deleteFrom('importJournal').where('importId', '=', runId).where('seq', '>=', notes[notes.length - 1].seq).execute();
        if (performance.now() - start >= BATCH_MS) return { more: true, kept };
      }
      await tx.deleteFrom('importRuns').where('id', '=', runId).execute();
      return { more: false, kept };
    });
    left.push(...more.kept);
    if (!more.more) return left;
    await nextTurn();
  }
}

/**
 * Undo the runs whose process is gone (it crashed mid-import), and forget the notes of those that
 * finished before it did. A run of a live process is another process's import in progress on the same
 * SQLite file (the CLI's local mode beside `ztc serve`): left alone.
 */
export async function undoUnfinishedImports(ctx: Ctx, progress: (line: string) => void = () => {}): Promise<number> {
  const runs = await ctx.store.db.selectFrom('importRuns').selectAll().execute();
  let undone = 0;
  for (const run of runs) {
    if (run.pid !== process.pid && processAlive(run.pid)) continue;
    if (run.finishedAt) {
      await forgetImportRun(ctx, run.id);
      continue;
    }
    const { n } = (await ctx.store.db.selectFrom('importJournal').select((eb) => eb.fn.countAll<number>().as('n')).where('importId', '=', run.id).executeTakeFirst()) ?? { n: 0 };
    const left = await undoImportRun(ctx, run.id);
    progress(`undid an import that did not finish (started ${run.startedAt} by pid ${run.pid}): deleted ${Number(n) - left.length} entities it had created${left.length ? `; kept ${left.length} that others now depend on: ${left.slice(0, 5).join(', ')}` : ''}`);
    undone++;
  }
  return undone;
}
