import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectHelpers } from '../dialect.js';

// PostgreSQL: how many names a `contains` pattern matches is estimated from the column's histogram, in
// steps of one bucket: at the default hundred buckets, 1% of the rows for each bucket bound the pattern
// matches. On the bench's Medium model "999" (5 of 5,000 identities) was guessed at 202, so a sorted
// page walked the name index backwards through every row hoping to fill itself early (0.7 ms) instead
// of asking the trigram index (0.01 ms). A thousand buckets bring the guess near the truth, and a
// pattern that matches most names still walks the index and stops after a page. ANALYZE then samples
// more rows of identities (300,000 at most).
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
