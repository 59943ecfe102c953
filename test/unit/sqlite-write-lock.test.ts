// Two connections to one SQLite file, as the API thread and the data plane's thread have: a write
// transaction that reads first must not fail because the other connection committed in between
// (SQLITE_BUSY_SNAPSHOT, answered as a 500 under the control channel's bench). Write transactions
// take the lock when they begin, so the other writer waits instead.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Migrator, sql, type Kysely } from 'kysely';
import { afterAll, expect, it } from 'vitest';
import { openSqlite } from '../../src/store/db.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-lock-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it('a transaction that reads, then writes, outlives another process writing meanwhile', async () => {
  const file = path.join(dir, 'ztc.db');
  const store = await openSqlite(file);
  await sql`create table marks (who text)`.execute(store.db);
  // The other process: waits for the lock (5 s), then writes.
  const script = `const D=require('better-sqlite3');const d=new D(${JSON.stringify(file)});d.pragma('busy_timeout = 5000');d.prepare("insert into marks values ('other')").run();`;
  let other: Promise<number> | undefined;
  await store.write(async (tx) => {
    await sql`select count(*) from marks`.execute(tx);
    other = new Promise((resolve) => spawn(process.execPath, ['-e', script], { cwd: process.cwd(), stdio: 'inherit' }).on('exit', (code) => resolve(code ?? 1)));
    // Long enough for the other process to have committed, were our transaction not holding the lock.
    await new Promise((r) => setTimeout(r, 500));
    await sql`insert into marks values ('us')`.execute(tx);
  });
  expect(await other).toBe(0);
  const rows = (await sql<{ who: string }>`select who from marks order by rowid`.execute(store.db)).rows.map((r) => r.who);
  expect(rows).toEqual(['us', 'other']);
  await store.close();
});

it('a migration that fails half-way leaves nothing of itself, so the next start can run it again', async () => {
  const store = await openSqlite(path.join(dir, 'migrated.db'));
  const fail = { now: true };
  const migrator = new Migrator({
    db: store.db,
    migrationTableName: 'test_migration',
    migrationLockTableName: 'test_migration_lock',
    provider: {
      getMigrations: async () => ({
        '9001-half': {
          up: async (db: Kysely<any>) => {
            await sql`create table half_made (x integer)`.execute(db);
            if (fail.now) throw new Error('killed here');
          },
        },
      }),
    },
  });
  expect((await migrator.migrateToLatest()).error).toBeDefined();
  const tables = async () => (await sql<{ name: string }>`select name from sqlite_master where name = 'half_made'`.execute(store.db)).rows;
  expect(await tables()).toEqual([]);
  fail.now = false;
  expect((await migrator.migrateToLatest()).error).toBeUndefined();
  expect(await tables()).toHaveLength(1);
  await store.close();
});

/**
 * Another connection of this process (the import's or the data plane's thread has one) holds the write
 * lock for 300 ms while `ours` writes: it waits for it, and the event loop ticks meanwhile. With the wait
 * inside the call (busy_timeout) no tick came, and the timer that ends the other transaction could
 * never fire: 5 s, then SQLITE_BUSY.
 */
async function waitBeside(name: string, ours: (store: Awaited<ReturnType<typeof openSqlite>>) => Promise<unknown>) {
  const file = path.join(dir, name);
  const store = await openSqlite(file);
  await sql`create table marks (who text)`.execute(store.db);
  const Sqlite = (await import('better-sqlite3')).default;
  const other = new Sqlite(file);
  other.exec('begin immediate');
  other.prepare("insert into marks values ('other')").run();
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 5);
  const release = setTimeout(() => other.exec('commit'), 300);
  const started = performance.now();
  try {
    await ours(store);
  } finally {
    clearInterval(ticker);
    clearTimeout(release);
  }
  other.close();
  const rows = (await sql<{ who: string }>`select who from marks order by rowid`.execute(store.db)).rows.map((r) => r.who);
  return { waited: performance.now() - started, longest, rows, store };
}

it('a write waiting for another connection to finish its transaction leaves the event loop running', async () => {
  const r = await waitBeside('waiting.db', (store) => store.write((tx) => sql`insert into marks values ('us')`.execute(tx)));
  expect(r.waited).toBeGreaterThanOrEqual(250);
  expect(r.longest).toBeLessThan(150);
  expect(r.rows).toEqual(['other', 'us']);
  await r.store.close();
});

it('so does a write outside a transaction (a login writing its API session while an import holds the lock)', async () => {
  // An insert built with Kysely, not in a transaction: SQLite takes the lock for the statement alone.
  const r = await waitBeside('autocommit.db', (store) => (store.db as unknown as Kysely<{ marks: { who: string } }>).insertInto('marks').values({ who: 'us' }).execute());
  expect(r.waited).toBeGreaterThanOrEqual(250);
  expect(r.longest, `${r.longest}`).toBeLessThan(250);
  expect(r.rows).toEqual(['other', 'us']);
  // The connection waits for the lock as before in statements that are not Kysely's writes (raw SQL).
  expect((await sql<{ timeout: number }>`pragma busy_timeout`.execute(r.store.db)).rows[0]).toEqual({ timeout: 5000 });
  await r.store.close();
});
