// Group commit for SQLite. Each commit of the one SQLite connection waits for the disk (fsync, a few
// milliseconds) on the thread that serves requests, so one transaction per write caps concurrent
// creates at a few hundred a second and stalls everything else meanwhile. Writes that arrive while a
// transaction runs are collected and run together in the next one, each inside its own savepoint:
// one write failing rolls back only itself, and every write's caller hears of it only after the
// commit that made it durable.
import { sql } from 'kysely';
import type { Db, Tx } from './db.js';

interface Job {
  fn(tx: Tx): Promise<unknown>;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

/** At most this many writes or this long per group, so reads waiting for the connection are not held up. */
const MAX_WRITES = 64;
const MAX_MS = 20;
/**
 * A write arriving this soon after the last commit waits for others to join its group while they keep
 * arriving, up to as long as the last group took (at most MAX_GATHER_MS); a lone write does not wait.
 */
const GATHER_AFTER_MS = 20;
const MAX_GATHER_MS = 10;

export function groupCommitter(db: Db): <T>(fn: (tx: Tx) => Promise<T>) => Promise<T> {
  const pending: Job[] = [];
  let running = false;

  async function runGroup() {
    const done: { job: Job; ok: boolean; value: unknown }[] = [];
    let current: Job | undefined;
    const start = performance.now();
    try {
      await db.transaction().execute(async (tx) => {
        // Writes that arrive while the group runs join it, within the bounds.
        while (pending.length && done.length < MAX_WRITES && (done.length === 0 || performance.now() - start < MAX_MS)) {
          const job = (current = pending.shift()!);
          await sql`savepoint w`.execute(tx);
          try {
            const value = await job.fn(tx);
            await sql`release w`.execute(tx);
            done.push({ job, ok: true, value });
          } catch (err) {
            await sql`rollback to w`.execute(tx);
            await sql`release w`.execute(tx);
            done.push({ job, ok: false, value: err });
          }
          current = undefined;
        }
      });
    } catch (err) {
      // The commit itself failed: none of the group's writes happened.
      for (const d of done) d.job.reject(err);
      current?.reject(err);
      // The transaction did not even begin (a closed store): the first write hears it, so the loop in
      // drain moves on instead of spinning on a queue that never shrinks.
      if (!done.length && !current) pending.shift()?.reject(err);
      return;
    }
    lastGroupSize = done.length;
    for (const d of done) (d.ok ? d.job.resolve : d.job.reject)(d.value);
  }

  let lastCommit = 0;
  let lastCommitMs = 0;
  let lastGroupSize = 0;
  async function drain() {
    running = true;
    try {
      while (pending.length) {
        // Under a stream of writes, give the next writers a moment to arrive before the group starts:
        // a request reaches its write only after reads that the open transaction would make wait.
        // The longer a commit takes (the disk's flush), the longer it pays to wait, as long as writers keep coming.
        // Only while writers come together (the last group had several): a client writing one request
        // after another would otherwise wait a timer tick on every write for company that never comes.
        if (performance.now() - lastCommit < GATHER_AFTER_MS && (lastGroupSize > 1 || pending.length > 1)) {
          const until = performance.now() + Math.min(MAX_GATHER_MS, Math.max(1, lastCommitMs));
          for (let seen = -1; seen !== pending.length && pending.length < MAX_WRITES && performance.now() < until; ) {
            seen = pending.length;
            await new Promise((r) => setTimeout(r, 1));
          }
        }
        const start = performance.now();
        await runGroup();
        lastCommit = performance.now();
        lastCommitMs = lastCommit - start;
      }
    } finally {
      running = false;
    }
  }

  return <T>(fn: (tx: Tx) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!running) void drain();
    });
}
