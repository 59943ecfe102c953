// On PostgreSQL, an admin's `name contains` / `icontains` over identities is answered from pg_trgm's
// indexes (migration 0026), not a scan of every row. SQLite remembers its counts instead: nothing to see.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { controllerForFile } from '../helpers/controller.js';

describe.skipIf(!process.env.ZTC_TEST_DB)('name filters on PostgreSQL', () => {
  // Inside the describe: on SQLite it is skipped, and no controller starts.
  const f = controllerForFile();
  it('count the matches through the trigram indexes, and find the same identities', async () => {
    const db = f.c.opened.ctx.store.db;
    for (const name of ['tri-alpha', 'tri-ALPHA-2', 'tri-beta']) await f.created('/identities', { name, type: 'Default', isAdmin: false });
    const list = async (filter: string) => (await f.mgmt('GET', `/identities?filter=${encodeURIComponent(filter)}`)).body;
    expect((await list('name contains "alpha"')).data.map((i: { name: string }) => i.name)).toEqual(['tri-alpha']);
    expect((await list('name icontains "alpha"')).meta.pagination.totalCount).toBe(2);
    // As many identities as make the planner choose between a scan and an index (rows as the API writes them).
    const model = await db.selectFrom('identities').selectAll().where('name', '=', 'tri-beta').executeTakeFirstOrThrow();
    await sql`insert into identities (id, name, type_id, auth_policy_id, created_at, updated_at)
      select 'tri' || g, 'crowd-' || g, ${model.typeId}, ${model.authPolicyId}, ${model.createdAt}, ${model.updatedAt} from generate_series(1, 20000) g`.execute(db);
    await sql`analyze identities`.execute(db);
    const plan = async (where: string) => (await sql.raw<Record<string, string>>(`explain select count(*) from identities where ${where}`).execute(db)).rows.map((r) => Object.values(r)[0]).join('\n');
    expect(await plan(`name like '%alpha%'`)).toMatch(/Bitmap Index Scan on identities_name_trgm/);
    expect(await plan(`lower(name) like '%alpha%'`)).toMatch(/Bitmap Index Scan on identities_lower_name_trgm/);
    expect((await list('name contains "alpha"')).meta.pagination.totalCount).toBe(1);
  });

  it('pages through a rare pattern by the trigram index and a common one by the sorted name', async () => {
    const db = f.c.opened.ctx.store.db;
    const model = await db.selectFrom('identities').selectAll().where('name', '=', 'tri-beta').executeTakeFirstOrThrow();
    await sql`delete from identities where name like 'crowd-%'`.execute(db);
    // 5,000 names numbered as the bench numbers its own; "999" matches five of them.
    await sql`insert into identities (id, name, type_id, auth_policy_id, created_at, updated_at)
      select 'num' || g, 'id-' || lpad(g::text, 6, '0'), ${model.typeId}, ${model.authPolicyId}, ${model.createdAt}, ${model.updatedAt} from generate_series(0, 4999) g`.execute(db);
    await sql`vacuum analyze identities`.execute(db);
    // Migration 0028: a thousand histogram buckets for the name (and lower(name)). At the default hundred
    // a pattern's matches are guessed in steps of 1% of the rows, by how many bucket bounds it matches:
    // on the bench's Medium model "999" (5 of 5,000) was guessed at 202 in one run, and the page walked
    // the whole name index. Which bounds match is luck of the numbering, so the statistics are checked
    // here, and the plans below for what they give.
    const targets = await sql<{ n: number }>`select attstattarget as n from pg_attribute
      where (attrelid = 'identities'::regclass and attname = 'name') or attrelid = 'identities_lower_name_trgm'::regclass order by 1`.execute(db);
    expect(targets.rows.map((r) => Number(r.n))).toEqual([1000, 1000]);
    // The page as store/list.ts sends it: its limit written in the SQL, and a LIKE never a named statement
    // (store/pg-prepared.ts), so each pattern is planned for itself: a rare one by the trigram index, one
    // most names match by walking the name index until the page is full.
    const page = async (pattern: string) =>
      (await sql.raw<Record<string, string>>(`explain select id from identities where name is not null and name like '${pattern}' order by name desc, id asc limit 26`).execute(db)).rows
        .map((r) => Object.values(r)[0])
        .join('\n');
    expect(await page('%999%')).toMatch(/Bitmap Index Scan on identities_name_trgm/);
    expect(await page('%id-%')).toMatch(/Index Scan Backward using identities_name_key/);
    const names = (await f.mgmt('GET', `/identities?filter=${encodeURIComponent('name contains "999" sort by name desc')}&limit=25`)).body.data.map((i: { name: string }) => i.name);
    expect(names).toEqual(['id-004999', 'id-003999', 'id-002999', 'id-001999', 'id-000999']);
  });
});
