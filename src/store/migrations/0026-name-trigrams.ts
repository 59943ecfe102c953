import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectHelpers } from '../dialect.js';

// PostgreSQL: `name contains "x"` (LIKE '%x%') and `icontains` (lower(name) LIKE ...) on identities
// scanned every row to count the matches, 25-60 ms on 100,000 identities where SQLite remembers its
// counts (store/count-cache.ts). pg_trgm's GIN indexes find them instead (a count in 0.2 ms, the
// admin's filtered list 46-57 -> 8-9 ms p50 in one run on a loaded machine). Identities only: the one
// table that reaches that size; the indexes cost every insert a little. pg_trgm ships with PostgreSQL
// and is a trusted extension (13+), so the database's owner may add it; where it cannot be added the
// lists stay correct, only slower.
export const nameTrigrams = (d: DialectHelpers): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    if (d.name !== 'postgres') return;
    // The migration's own transaction would be aborted by a refused CREATE EXTENSION: try it apart.
    await sql`savepoint name_trigrams`.execute(db);
    try {
      await sql`create extension if not exists pg_trgm`.execute(db);
      await sql`create index if not exists identities_name_trgm on identities using gin (name gin_trgm_ops)`.execute(db);
      await sql`create index if not exists identities_lower_name_trgm on identities using gin (lower(name) gin_trgm_ops)`.execute(db);
      await sql`release savepoint name_trigrams`.execute(db);
    } catch {
      await sql`rollback to savepoint name_trigrams`.execute(db);
    }
  },
});
