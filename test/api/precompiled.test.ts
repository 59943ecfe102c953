// Precompiled queries with a list parameter (store/precompiled.ts p.anyOf: an array on PostgreSQL, JSON
// text on SQLite): values that quoting gets wrong come back exactly, for one, many and no values, and
// past the executions after which PostgreSQL keeps a generic plan.
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { all, first, precompile } from '../../src/store/precompiled.js';
import { MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
const awkward = ['quote"d', 'back\\slash', 'com,ma', '{braces}', "it's", 'spa ce', 'NULL', 'ünïcödé', '[1]'];

beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  for (const name of [...awkward, 'plain-1', 'plain-2']) {
    const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'User', isAdmin: false } });
    expect(r.status, r.text).toBe(201);
  }
});
afterAll(() => c.close());

const byNames = precompile<{ name: string }>((db, p) =>
  db
    .selectFrom('identities')
    .select('name')
    .where((eb) => p.anyOf(eb.ref('name'), 0))
    .where('isAdmin', '=', p(1))
    .orderBy('name') as never,
);

it('finds exactly the listed values, whatever their characters, as often as asked', async () => {
  const db = c.opened.ctx.store.db;
  const names = async (list: string[]) => (await all(db, byNames, [list, 0])).map((r) => r.name);
  for (let i = 0; i < 8; i++) {
    expect(await names(awkward)).toEqual([...awkward].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(await names([awkward[i]])).toEqual([awkward[i]]);
    expect(await names([])).toEqual([]);
    expect(await names(['plain-1', 'nobody', 'plain-1'])).toEqual(['plain-1']);
  }
});

// PostgreSQL: fixed-shape statements run where the generic plan is kept (store/db.ts); everything else,
// transactions included, keeps PostgreSQL's own choice (a list's LIKE pattern needs it).
const planMode = precompile<{ mode: string }>((db) => db.selectNoFrom(sql<string>`current_setting('plan_cache_mode')`.as('mode')) as never);

it.skipIf(!process.env.ZTC_TEST_DB)('runs on connections that keep the generic plan, outside transactions only', async () => {
  const { db } = c.opened.ctx.store;
  for (let i = 0; i < 3; i++) expect((await first(db, planMode, []))?.mode).toBe('force_generic_plan');
  expect((await sql<{ mode: string }>`select current_setting('plan_cache_mode') as mode`.execute(db)).rows[0].mode).toBe('auto');
  expect(await db.transaction().execute(async (tx) => (await first(tx, planMode, []))?.mode)).toBe('auto');
});
