// Group commits on SQLite commit without waiting for the disk and tell their callers only once the WAL
// is flushed (store/group-commit.ts, store/wal-sync.ts). Here the flush is held back by a WalSyncer the
// test releases, over a real SQLite file: a caller is not answered before its flush, the next group
// commits meanwhile, a failed flush fails its callers, and the real syncer flushes the real WAL file (or the database, once the WAL is checkpointed away).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, expect, it } from 'vitest';
import { openSqlite, type Store } from '../../src/store/db.js';
import { groupCommitter } from '../../src/store/group-commit.js';
import { walSyncer, type WalSyncer } from '../../src/store/wal-sync.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-flush-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Flushes that wait until the test lets each one go (or fail). */
function heldFlushes() {
  const waiting: { resolve(): void; reject(e: unknown): void }[] = [];
  const syncer: WalSyncer = { sync: () => new Promise<void>((resolve, reject) => waiting.push({ resolve, reject })) };
  return { syncer, waiting };
}

const until = async (f: () => boolean) => {
  while (!f()) await new Promise((r) => setImmediate(r));
};

async function openMarks(name: string): Promise<Store> {
  const store = await openSqlite(path.join(dir, name));
  await sql`create table marks (who text)`.execute(store.db);
  return store;
}
const marks = async (store: Store) => (await sql<{ who: string }>`select who from marks order by rowid`.execute(store.db)).rows.map((r) => r.who);

it('answers a write only after its flush, while the next group commits', async () => {
  const store = await openMarks('held.db');
  const { syncer, waiting } = heldFlushes();
  const write = groupCommitter(store.db, syncer);
  let firstDone = false;
  const first = write(async (tx) => void (await sql`insert into marks values ('a')`.execute(tx))).then(() => (firstDone = true));
  await until(() => waiting.length === 1);
  // Committed (readable) but not yet answered.
  expect(await marks(store)).toEqual(['a']);
  expect(firstDone).toBe(false);
  // The next write commits while the first flush is still out.
  const second = write(async (tx) => void (await sql`insert into marks values ('b')`.execute(tx)));
  await until(() => waiting.length === 2);
  expect(await marks(store)).toEqual(['a', 'b']);
  expect(firstDone).toBe(false);
  waiting[0].resolve();
  await first;
  waiting[1].resolve();
  await second;
  await store.close();
});

it('fails the callers of a group whose flush failed, and keeps other writes on the connection durable (synchronous FULL)', async () => {
  const store = await openMarks('failed.db');
  const { syncer, waiting } = heldFlushes();
  const write = groupCommitter(store.db, syncer);
  const both = [1, 2].map((i) => write(async (tx) => void (await sql`insert into ${sql.raw(`marks values ('w${i}')`)}`.execute(tx))));
  await until(() => waiting.length === 1);
  waiting[0].reject(new Error('EIO'));
  for (const p of both) await expect(p).rejects.toThrow('EIO');
  // Only the group's own commit is relaxed: the connection is back at FULL (2) for anything else.
  expect((await sql<{ synchronous: number }>`pragma synchronous`.execute(store.db)).rows[0].synchronous).toBe(2);
  await store.close();
});

it('flushes the real WAL file, one flush at a time, shared by those who arrive meanwhile', async () => {
  const store = await openMarks('real.db');
  const syncer = walSyncer(path.join(dir, 'real.db'));
  const write = groupCommitter(store.db, syncer);
  await Promise.all(Array.from({ length: 50 }, (_, i) => write(async (tx) => void (await sql`insert into ${sql.raw(`marks values ('r${i}')`)}`.execute(tx)))));
  expect((await marks(store)).length).toBe(50);
  // Asked three times at once: one flush runs, the two others share the next one.
  const [a, b, c] = [syncer.sync(), syncer.sync(), syncer.sync()];
  expect(b).toBe(c);
  expect(a).not.toBe(b);
  await Promise.all([a, b, c]);
  await store.close();
  // Closed, its WAL is checkpointed into the database and gone: the database file is flushed instead.
  expect(fs.existsSync(path.join(dir, 'real.db-wal'))).toBe(false);
  await syncer.sync();
  // Neither file: the flush fails rather than pretending.
  await expect(walSyncer(path.join(dir, 'none.db')).sync()).rejects.toThrow(/ENOENT/);
});
