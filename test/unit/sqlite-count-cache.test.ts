// List counts are remembered only while the database is unchanged (store/count-cache.ts): a write on
// the same connection (committed or rolled back), a commit by another connection to the file (the data
// plane's or an import's thread, another process) each make the next count run again.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type CompiledQuery } from 'kysely';
import { afterAll, expect, it } from 'vitest';
import { cachedCount } from '../../src/store/count-cache.js';
import { openSqlite } from '../../src/store/db.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-count-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it('counts again after any write, and only then', async () => {
  const file = path.join(dir, 'count.db');
  const store = await openSqlite(file);
  const db = store.db;
  await sql`create table t (v text)`.execute(db);
  const q = sql<{ n: number }>`select count(*) as n from t where v like ${'%9%'}`.compile(db);
  let runs = 0;
  const run = async (c: CompiledQuery) => (runs++, Number(((await db.executeQuery<{ n: number }>(c)).rows[0] as { n: number }).n));
  const count = () => cachedCount(db, q, run);

  expect(await count()).toBe(0);
  expect(await count()).toBe(0);
  expect(runs).toBe(1);

  // This connection's write (through the group committer).
  await store.write(async (tx) => void (await sql`insert into t values ('a9')`.execute(tx)));
  expect(await count()).toBe(1);
  expect(runs).toBe(2);
  expect(await count()).toBe(1);
  expect(runs).toBe(2);

  // A write that is rolled back changes nothing, but is not trusted to.
  await db.transaction().execute(async (tx) => {
    await sql`insert into t values ('b9')`.execute(tx);
    throw new Error('undo');
  }).catch(() => {});
  expect(await count()).toBe(1);
  expect(runs).toBe(3);

  // Another connection's commit (as the data plane's thread would).
  const other = await openSqlite(file, { check: false });
  await sql`insert into t values ('c9')`.execute(other.db);
  expect(await count()).toBe(2);
  expect(runs).toBe(4);
  await other.close();

  // A different filter is a different count.
  const q2 = sql<{ n: number }>`select count(*) as n from t where v like ${'%c%'}`.compile(db);
  expect(await cachedCount(db, q2, run)).toBe(1);
  expect(runs).toBe(5);

  // Inside a transaction nothing is remembered or reused (its rows may yet be rolled back).
  await db.connection().execute(async (c) => {
    await sql`begin`.execute(c);
    await sql`insert into t values ('d9')`.execute(c);
    expect(await cachedCount(db, q, async (x) => (runs++, Number(((await c.executeQuery<{ n: number }>(x)).rows[0] as { n: number }).n)))).toBe(3);
    await sql`rollback`.execute(c);
  });
  expect(runs).toBe(6);
  expect(await count()).toBe(2);
  await store.close();
});
