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
});
