// Exact list counts, remembered while nothing has been written. An admin's filtered list (`name
// contains "999"`) counts its matches by scanning every name: 8 ms of the controller's thread for
// 100,000 identities on a quiet machine (a covering-index scan; LIKE '%x%' can use no index), most of
// the call's cost on the Large model, and paging through the same filter counted again at each page.
// upstream's totalCount is exact (no capped or estimated count), so the count is kept, not approximated:
// it is reused only while the database is as it was when it was counted.
//
// SQLite only. The version is read straight from the connection, outside Kysely: PRAGMA data_version
// (changes when another connection commits: the data plane's thread, an import's, another process) and
// total_changes() (every row this connection's statements changed, rolled back or not). Neither is read
// inside a transaction (a count there could see rows that are then rolled back): no cache then. Both are
// read before the count runs, so a write that lands in between only makes the entry stale at once.
// PostgreSQL has no such cheap version across the controllers that share a database: it always counts.
import type { CompiledQuery } from 'kysely';
import type { Db } from './schema.js';

type Version = () => string | undefined;

const versions = new WeakMap<Db, Version>();
const caches = new WeakMap<Db, Map<string, { version: string; n: number }>>();
/** Distinct counts kept per store (filters an admin pages through); the oldest goes first. */
const MAX_ENTRIES = 256;

/** Called by the store that can say cheaply whether anything changed since (SQLite's). */
export function registerVersion(db: Db, version: Version) {
  versions.set(db, version);
  caches.set(db, new Map());
}

/** The count `q` answers, from the cache while the database is unchanged, else run (and kept). */
export async function cachedCount(db: Db, q: CompiledQuery, run: (q: CompiledQuery) => Promise<number>): Promise<number> {
  const version = versions.get(db)?.();
  const cache = caches.get(db);
  if (version === undefined || !cache) return run(q);
  const key = `${q.sql}\0${JSON.stringify(q.parameters)}`;
  const hit = cache.get(key);
  if (hit && hit.version === version) return hit.n;
  const n = await run(q);
  cache.delete(key);
  if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  cache.set(key, { version, n });
  return n;
}

/** For benchmarks: the version function a store registered. */
export const versionOf = (db: Db) => versions.get(db);
