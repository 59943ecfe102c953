// Every difference between SQLite and PostgreSQL lives here, so queries elsewhere stay portable.
import { sql, type RawBuilder, type Expression } from 'kysely';

export type DialectName = 'sqlite' | 'postgres';

export interface DialectHelpers {
  name: DialectName;
  /** A text value read from a JSON object column at a top-level key (tags.env). */
  jsonText(column: Expression<unknown> | RawBuilder<unknown>, key: string): RawBuilder<string | null>;
  /** A query that may take OFFSET without a LIMIT (SQLite needs LIMIT -1 for that). */
  withoutLimit<Q extends { limit(n: number): Q }>(q: Q): Q;
  /** Which field a unique-constraint violation was about, or undefined if the error is something else. */
  uniqueViolation(err: unknown): string | undefined;
}

const sqlite: DialectHelpers = {
  name: 'sqlite',
  withoutLimit: (q) => q.limit(-1),
  jsonText: (column, key) => sql<string | null>`json_extract(${column}, ${'$."' + key.replace(/["\\]/g, '') + '"'})`,
  uniqueViolation(err) {
    const e = err as { code?: string; message?: string };
    if (e?.code !== 'SQLITE_CONSTRAINT_UNIQUE' && e?.code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') return undefined;
    // "UNIQUE constraint failed: identities.name"
    const m = /failed: \w+\.(\w+)/.exec(e.message ?? '');
    return m ? snakeToCamel(m[1]) : 'id';
  },
};

const postgres: DialectHelpers = {
  name: 'postgres',
  withoutLimit: (q) => q,
  jsonText: (column, key) => sql<string | null>`(${column}::jsonb ->> ${key})`,
  uniqueViolation(err) {
    const e = err as { code?: string; detail?: string };
    if (e?.code !== '23505') return undefined;
    // 'Key (name)=(x) already exists.'
    const m = /Key \((\w+)\)/.exec(e.detail ?? '');
    return m ? snakeToCamel(m[1]) : 'id';
  },
};

export const dialects: Record<DialectName, DialectHelpers> = { sqlite, postgres };

export function snakeToCamel(s: string): string {
  return s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
}
