// PostgreSQL's named prepared statements for the SQL texts that repeat. Kysely's PostgresDialect sends
// every query as an unnamed statement: the server parses and plans its text each time, which on the
// client calls' small indexed queries is much of their cost. A text seen a second time gets a name;
// node-postgres then parses it once per connection and afterwards only binds and executes it (and
// PostgreSQL may keep a generic plan). Other texts without parameters (begin, commit, migrations' DDL)
// and LIKEs on a parameter stay unnamed, and at most MAX_NAMED texts are named (lists' `in (...)` vary with their length): the
// server keeps each named statement for the connection's life.
// One case it changes: a statement prepared before another controller migrated the schema under it
// fails with "cached plan must not change result type" (the server keeps its first row description);
// its text is then forgotten, so that query fails once and is prepared anew under another name.

const MAX_NAMED = 2000;

export interface StatementNames {
  nameFor(text: string): string | undefined;
  /** The statement no longer fits the schema: the next time its text repeats, a new name. */
  forget(text: string): void;
}

export function statementNames(): StatementNames {
  const seen = new Set<string>();
  const named = new Map<string, string>();
  let made = 0;
  return {
    forget(text) {
      named.delete(text);
      seen.delete(text);
    },
    nameFor(text) {
      const name = named.get(text);
      if (name) return name;
      if (named.size >= MAX_NAMED) return undefined;
      if (!seen.has(text)) {
        if (seen.size >= MAX_NAMED * 4) seen.clear();
        seen.add(text);
        return undefined;
      }
      const n = `ztc_${(made++).toString(36)}`;
      named.set(text, n);
      return n;
    },
  };
}

type Query = (...args: unknown[]) => unknown;

const SELECT = /^\s*select\s/i;
// A LIKE on a parameter (a list's `contains`): the pattern decides the plan (a rare one asks the trigram
// index, a common one walks the sort's index and stops after a page), and a named statement may settle
// on one generic plan for every pattern. Left unnamed, it is planned for its own pattern each time.
const PATTERN = /\slike \$\d/i;

/** Makes a pool client's query(text, values) use a named statement once its text repeats. */
export function prepareRepeated(client: { query: Query }, names: StatementNames) {
  const query = client.query.bind(client) as Query;
  client.query = (...args: unknown[]) => {
    const [text, values] = args;
    // A select without parameters repeats too (the count of an unfiltered list: `where (1 = 1)`), and
    // unnamed it is planned on every call; begin, commit and DDL stay unnamed.
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values) && (values.length || SELECT.test(text)) && !PATTERN.test(text)) {
      const name = names.nameFor(text);
      if (name) {
        const r = query({ name, text, values });
        if (r instanceof Promise)
          return r.catch((err: Error & { code?: string }) => {
            if (err.code === '0A000' && /cached plan must not change result type/.test(err.message)) names.forget(text);
            throw err;
          });
        return r;
      }
    }
    return query(...args);
  };
}
