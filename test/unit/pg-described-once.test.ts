// Named statements that ask PostgreSQL to describe their rows once (store/pg-prepared.ts describedOnce),
// on a real server (runs when ZTC_TEST_DB names one): later executions read their rows with the fields
// and parsers of the first; a value that cannot be sent, a failing execution and a schema change under
// a statement leave the connection working and the answers right.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describedOnce, prepareRepeated, statementNames, type Pg } from '../../src/store/pg-prepared.js';
import { testDatabase } from '../helpers/controller.js';

describe.skipIf(!process.env.ZTC_TEST_DB)('named statements described once (PostgreSQL)', () => {
  let client: pg.Client;
  let url: string;
  const names = statementNames();
  type Answer = { rows: Record<string, unknown>[]; fields: { name: string }[] };
  const q = (text: string, values: unknown[]) => client.query(text, values) as unknown as Promise<Answer>;

  beforeAll(async () => {
    url = await testDatabase();
    client = new pg.Client({ connectionString: url });
    await client.connect();
    prepareRepeated(client as never, names, describedOnce(pg as unknown as Pg));
    await client.query('create table t (id int primary key, label text, at timestamptz, n numeric, flags jsonb)');
    await client.query(`insert into t values (1, 'one', '2026-01-02T03:04:05Z', 12.50, '{"a":1}'), (2, null, null, null, null)`);
  });
  afterAll(() => client?.end());

  it('reads rows with the first description: same values and types, the same fields object from the third run', async () => {
    const text = 'select id, label, at, n, flags from t where id = any($1) order by id';
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i++) answers.push(await q(text, [[1, 2]]));
    // First unnamed, second named (prepared and described), then only bound and executed.
    expect(answers[2].fields).toBe(answers[3].fields);
    expect(answers[1].fields).toBe(answers[2].fields);
    for (const a of answers) {
      expect(a.rows).toEqual([
        { id: 1, label: 'one', at: new Date('2026-01-02T03:04:05Z'), n: '12.50', flags: { a: 1 } },
        { id: 2, label: null, at: null, n: null, flags: null },
      ]);
      expect(a.fields.map((f) => f.name)).toEqual(['id', 'label', 'at', 'n', 'flags']);
    }
    // No row: the fields are still there, and the next answer has rows again.
    expect((await q(text, [[42]])).rows).toEqual([]);
    expect((await q(text, [[2]])).rows).toEqual([{ id: 2, label: null, at: null, n: null, flags: null }]);
  });

  it('answers a value it cannot send, and a failing execution, with an error; the connection keeps working', async () => {
    const text = 'select id, 10 / $2::int as q from t where id = $1';
    expect((await q(text, [1, 2])).rows).toEqual([{ id: 1, q: 5 }]);
    expect((await q(text, [1, 5])).rows).toEqual([{ id: 1, q: 2 }]);
    await expect(q(text, [1, 0])).rejects.toThrow(/division by zero/);
    expect((await q(text, [1, 10])).rows).toEqual([{ id: 1, q: 1 }]);
    const unsendable = { toPostgres: () => { throw new Error('cannot be sent'); } };
    await expect(q(text, [1, unsendable])).rejects.toThrow(/cannot be sent/);
    expect((await q(text, [1, 1])).rows).toEqual([{ id: 1, q: 10 }]);
    // The same on a statement's first named use (prepared in the same message as the failed bind).
    // node-postgres alone answers "prepared statement does not exist" on the next use after either.
    const other = 'select id, $2::int as v from t where id = $1';
    expect((await q(other, [1, 3])).rows).toEqual([{ id: 1, v: 3 }]);
    await expect(q(other, [1, unsendable])).rejects.toThrow(/cannot be sent/);
    for (let i = 0; i < 3; i++) expect((await q(other, [1, i])).rows).toEqual([{ id: 1, v: i }]);
  });

  it('describes per connection: one that prepares a statement after the schema changed reads the new shape', async () => {
    // Two connections sharing one set of names, as a pool's do (or two controllers' pools, one of which migrated).
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      prepareRepeated(other as never, names, describedOnce(pg as unknown as Pg));
      await client.query('create table u (id int primary key, a text)');
      await client.query(`insert into u values (1, 'a')`);
      const text = 'select * from u where id = $1';
      for (let i = 0; i < 3; i++) expect((await q(text, [1])).rows).toEqual([{ id: 1, a: 'a' }]);
      await client.query(`alter table u add column b text default 'b'`);
      // The other connection prepares the named statement now: it reads the new shape, every time.
      for (let i = 0; i < 3; i++) expect(((await other.query(text, [1])) as unknown as Answer).rows).toEqual([{ id: 1, a: 'a', b: 'b' }]);
      // The first is refused once (its statement's result changed), then prepares it anew.
      await expect(q(text, [1])).rejects.toThrow(/cached plan must not change result type/);
      for (let i = 0; i < 3; i++) expect((await q(text, [1])).rows).toEqual([{ id: 1, a: 'a', b: 'b' }]);
    } finally {
      await other.end();
    }
  });

  it('takes the new shape after the schema changed under a statement (refused once, then named anew)', async () => {
    const text = 'select * from t where id = $1';
    await q(text, [1]);
    await q(text, [1]);
    expect(Object.keys((await q(text, [1])).rows[0])).toEqual(['id', 'label', 'at', 'n', 'flags']);
    await client.query('alter table t add column extra text default \'x\'');
    await expect(q(text, [1])).rejects.toThrow(/cached plan must not change result type/);
    await q(text, [1]);
    for (let i = 0; i < 3; i++) expect((await q(text, [1])).rows[0]).toMatchObject({ id: 1, label: 'one', extra: 'x' });
  });
});
