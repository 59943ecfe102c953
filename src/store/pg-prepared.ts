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

/** A named statement's rows as node-postgres reads them: their fields, each field's parser, the empty row. */
export interface Shape {
  fields: unknown[];
  parsers: unknown[];
  empty: unknown;
}

interface PgQuery {
  name?: string;
  portal: string;
  values?: unknown[];
  binary?: boolean;
  rows?: number;
  callback?: (err: Error | null, result: unknown) => void;
  _result: { fields: unknown[]; _parsers: unknown[]; _prebuiltEmptyResultObject: unknown };
  _accumulateRows: boolean;
  hasBeenParsed(connection: unknown): boolean;
  handleError(err: unknown, connection: unknown): void;
  _getRows(connection: unknown, rows?: number): void;
}
interface PgConnection {
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  bind(o: unknown): void;
  close(o: unknown): void;
  sync(): void;
}
export interface Pg {
  Query: new (config: unknown) => object;
  utils: { prepareValue: unknown };
}
export type MakeQuery = (config: { name: string; text: string; values: unknown[] }) => PgQuery;

/**
 * Named statements that ask the server to describe their rows once per connection. node-postgres asks
 * on every execution (Describe), then parses the answer and builds the row's parsers again: for the
 * current identity's read (about 60 columns) a quarter of what its request allocated, and the server's
 * time to send it. A prepared statement's rows keep the shape the server first described on that
 * connection (it refuses to run one whose result the schema changed: "cached plan must not change
 * result type", and the text is then named anew, see forget), so once a connection has described a
 * statement, later executions there are only bound and executed, their rows read with the known
 * fields and parsers. Per connection, not per name: a connection that prepares the statement after
 * another controller migrated the schema describes the new shape.
 */
export function describedOnce(pg: Pg): MakeQuery {
  const Base = pg.Query as unknown as new (config: unknown) => PgQuery & { prepare(connection: unknown): void; handleRowDescription(msg: unknown): void; handleReadyForQuery(connection: unknown): void };
  const byConnection = new WeakMap<object, Map<string, Shape>>();
  const shapesOf = (connection: object) => {
    let m = byConnection.get(connection);
    if (!m) byConnection.set(connection, (m = new Map()));
    return m;
  };
  class DescribedOnce extends Base {
    /** A value could not be sent: the statement was closed on the server (see handleReadyForQuery). */
    private unsent = false;
    private preparing = false;
    private connection?: object;

    override prepare(connection: PgConnection) {
      this.connection = connection;
      const shape = this.name && this.hasBeenParsed(connection) ? shapesOf(connection).get(this.name) : undefined;
      if (!shape) {
        this.preparing = true;
        try {
          return super.prepare(connection);
        } finally {
          this.preparing = false;
        }
      }
      try {
        connection.bind({ portal: this.portal, statement: this.name, values: this.values, binary: this.binary, valueMapper: pg.utils.prepareValue });
      } catch (err) {
        // As node-postgres does for a value it cannot send: the statement closed, the error answered.
        connection.close({ type: 'S', name: this.name });
        connection.sync();
        this.unsent = true;
        this.handleError(err, connection);
        return;
      }
      Object.assign(this._result, { fields: shape.fields, _parsers: shape.parsers, _prebuiltEmptyResultObject: shape.empty });
      this._accumulateRows = true;
      this._getRows(connection, this.rows);
    }
    override handleError(err: unknown, connection: unknown) {
      // Called from node-postgres's own prepare only when a value could not be sent (it closed the statement).
      if (this.preparing) this.unsent = true;
      super.handleError(err, connection);
    }
    override handleReadyForQuery(connection: PgConnection) {
      // node-postgres still counts a statement it closed after a value it could not send as parsed, and
      // its next use failed with "prepared statement does not exist": forgotten here, it is parsed again.
      if (this.unsent && this.name) {
        delete connection.parsedStatements[this.name];
        delete connection.submittedNamedStatements[this.name];
        shapesOf(connection).delete(this.name);
      }
      super.handleReadyForQuery(connection);
    }
    override handleRowDescription(msg: unknown) {
      super.handleRowDescription(msg);
      const r = this._result;
      if (this.name && this.connection) shapesOf(this.connection).set(this.name, { fields: r.fields, parsers: r._parsers, empty: r._prebuiltEmptyResultObject });
    }
  }
  return (config) => new DescribedOnce(config);
}

/**
 * Makes a pool client's query(text, values) use a named statement once its text repeats; `make`, when
 * given, builds that statement's query (describedOnce).
 */
export function prepareRepeated(client: { query: Query }, names: StatementNames, make?: MakeQuery) {
  const query = client.query.bind(client) as Query;
  client.query = (...args: unknown[]) => {
    const [text, values] = args;
    // A select without parameters repeats too (the count of an unfiltered list: `where (1 = 1)`), and
    // unnamed it is planned on every call; begin, commit and DDL stay unnamed.
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values) && (values.length || SELECT.test(text)) && !PATTERN.test(text)) {
      const name = names.nameFor(text);
      if (name) {
        const config = { name, text, values: values as unknown[] };
        const r = make ? submitted(query, make(config)) : query(config);
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

/** A query object sent as such (node-postgres then returns it, not a promise), as a promise of its result. */
function submitted(query: Query, q: PgQuery): Promise<unknown> {
  return new Promise((resolve, reject) => {
    q.callback = (err, result) => (err ? reject(err) : resolve(result));
    query(q);
  });
}
