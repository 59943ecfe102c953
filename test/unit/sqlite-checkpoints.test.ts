// The WAL's checkpoints run on a thread of their own (store/checkpointer.ts, store/checkpoint-worker.ts),
// not inside the API connection's commits (wal_autocheckpoint = 0 there): the WAL still stays bounded
// under steady writes (it is restarted, not only copied), no write is lost, and without the thread the
// connection keeps SQLite's own autocheckpoint.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, expect, it, vi } from 'vitest';
import { openStore, type Db } from '../../src/store/db.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-ckpt-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());

const autocheckpoint = async (db: Db) =>
  (await sql<{ walAutocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db)).rows[0].walAutocheckpoint;

it('keeps the WAL bounded under steady writes, checkpointing off the API connection', async () => {
  const file = path.join(dir, 'bounded.db');
  const store = await openStore({ file });
  expect(store.checkpoints).toBeDefined();
  expect(await autocheckpoint(store.db)).toBe(0);
  const seen = { checkpoints: 0, restarted: false, lastLog: 0 };
  store.checkpoints!.observe((c) => {
    seen.checkpoints++;
    if (c.log < seen.lastLog) seen.restarted = true;
    seen.lastLog = c.log;
  });
  await sql`create table t (id integer primary key, v text)`.execute(store.db);
  // 48 MB through the WAL, 8 writers at once as the API's requests would; with copies alone (PASSIVE)
  // the WAL grew with the writes (91-113 MB for 20,000 smaller ones).
  const WRITES = 12_000;
  const payload = 'x'.repeat(4000);
  let next = 0;
  let maxWal = 0;
  const writer = async () => {
    while (next < WRITES) {
      const k = next++;
      await store.write(async (tx) => void (await sql`insert into t (id, v) values (${k}, ${payload})`.execute(tx)));
      if (k % 200 === 0) maxWal = Math.max(maxWal, fs.statSync(`${file}-wal`).size);
    }
  };
  await Promise.all(Array.from({ length: 8 }, writer));
  const written = WRITES * payload.length;
  expect(seen.checkpoints).toBeGreaterThan(0);
  expect(seen.restarted).toBe(true);
  expect(maxWal).toBeLessThan(written / 2);
  expect((await sql<{ n: number }>`select count(*) as n from t`.execute(store.db)).rows[0].n).toBe(WRITES);
  await store.close();
  // Everything is in the database once closed (the last connection checkpointed the rest).
  const again = await openStore({ file });
  expect((await sql<{ n: number }>`select count(*) as n from t`.execute(again.db)).rows[0].n).toBe(WRITES);
  await again.close();
}, 120_000);

it('leaves checkpoints to the connection when the thread is not to be had', async () => {
  vi.stubEnv('ZTC_CHECKPOINT_THREAD', '0');
  const store = await openStore({ file: path.join(dir, 'fallback.db') });
  expect(store.checkpoints).toBeUndefined();
  expect(store.autocheckpointPages).toBe(1000);
  expect(await autocheckpoint(store.db)).toBe(1000);
  await store.close();
});
