// Repeated SQL texts become named prepared statements on PostgreSQL (store/pg-prepared.ts): the second
// time a text with parameters (or a select without) is seen, not the first; never begin, commit or
// DDL; a statement the schema changed under is forgotten and named anew.
import { expect, it } from 'vitest';
import { prepareRepeated, statementNames } from '../../src/store/pg-prepared.js';

function fakeClient(fail?: (q: unknown) => Error | undefined) {
  const sent: unknown[] = [];
  const client = {
    query: (...args: unknown[]) => {
      sent.push(args.length === 1 ? args[0] : args);
      const err = fail?.(args[0]);
      return err ? Promise.reject(err) : Promise.resolve({ rows: [] });
    },
  };
  return { client, sent };
}

it('names a text with parameters from its second use, per text', async () => {
  const names = statementNames();
  const { client, sent } = fakeClient();
  prepareRepeated(client, names);
  await client.query('select * from t where id = $1', [1]);
  await client.query('select * from t where id = $1', [2]);
  await client.query('select * from t where id = $1', [3]);
  await client.query('begin', []);
  await client.query('begin', []);
  await client.query('select * from u where id = $1', [4]);
  expect(sent[0]).toEqual(['select * from t where id = $1', [1]]);
  expect(sent[1]).toEqual({ name: 'ztc_0', text: 'select * from t where id = $1', values: [2] });
  expect(sent[2]).toEqual({ name: 'ztc_0', text: 'select * from t where id = $1', values: [3] });
  expect(sent[3]).toEqual(['begin', []]);
  expect(sent[4]).toEqual(['begin', []]);
  expect(sent[5]).toEqual(['select * from u where id = $1', [4]]);
});

it('names a select without parameters too (a list filtered by literals only), never begin or DDL', async () => {
  const names = statementNames();
  const { client, sent } = fakeClient();
  prepareRepeated(client, names);
  const text = 'select "e"."id" from "identities" as "e" where (1 = 1) order by "e"."type_id" desc limit 25';
  for (const q of [text, text, 'commit', 'commit', 'create index i on t (a)', 'create index i on t (a)']) await client.query(q, []);
  expect(sent[0]).toEqual([text, []]);
  expect(sent[1]).toEqual({ name: 'ztc_0', text, values: [] });
  expect(sent.slice(2)).toEqual([['commit', []], ['commit', []], ['create index i on t (a)', []], ['create index i on t (a)', []]]);
});

it('never names a LIKE on a parameter: each pattern is planned for itself', async () => {
  const names = statementNames();
  const { client, sent } = fakeClient();
  prepareRepeated(client, names);
  const text = 'select "e"."id" from "identities" as "e" where ("e"."name" is not null and "e"."name" like $1) order by "e"."name" desc limit 26';
  for (const v of ['%999%', '%999%', '%id%']) await client.query(text, [v]);
  expect(sent).toEqual([[text, ['%999%']], [text, ['%999%']], [text, ['%id%']]]);
});

it('forgets a statement whose result type the schema changed, and names it anew', async () => {
  const names = statementNames();
  let broken = true;
  const { client, sent } = fakeClient((q) => {
    if (broken && typeof q === 'object' && (q as { name: string }).name === 'ztc_0') return Object.assign(new Error('cached plan must not change result type'), { code: '0A000' });
    return undefined;
  });
  prepareRepeated(client, names);
  const text = 'select * from t where id = $1';
  await client.query(text, [1]);
  await expect(client.query(text, [2])).rejects.toThrow(/cached plan/);
  broken = false;
  await client.query(text, [3]);
  await client.query(text, [4]);
  expect(sent[2]).toEqual([text, [3]]);
  expect(sent[3]).toEqual({ name: 'ztc_1', text, values: [4] });
});
