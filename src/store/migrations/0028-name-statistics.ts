import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectHelpers } from '../dialect.js';

// PostgreSQL: how many names a `contains` pattern matches is estimated from the column's histogram. At
// the default hundred buckets a pattern that matches none of them is still guessed at 4% of the rows
// (202 of 5,000 identities for "999", which match 5), so a sorted page walked the name index backwards
// through every row hoping to fill itself early (0.7 ms) instead of asking the trigram index (0.01 ms).
// A thousand buckets bring the guess near the truth, and a pattern that matches most names still walks
// the index and stops after a page. ANALYZE then samples more rows of identities (still bounded).
export const nameStatistics = (d: DialectHelpers): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    if (d.name !== 'postgres') return;
    await sql`alter table identities alter column name set statistics 1000`.execute(db);
    // `icontains` reads lower(name): its statistics are the expression index's (0026, when pg_trgm was allowed).
    const lower = await sql<{ r: string | null }>`select to_regclass('identities_lower_name_trgm')::text as r`.execute(db);
    if (lower.rows[0]?.r) await sql`alter index identities_lower_name_trgm alter column 1 set statistics 1000`.execute(db);
    await sql`analyze identities`.execute(db);
  },
});
