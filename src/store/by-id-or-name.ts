// Clients refer to configs, services, routers and config types by id or by their unique name.
import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** The row whose id is `ref`, or else the one whose name is (an id wins over a name). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function byIdOrName<R = Record<string, any>>(db: AnyDb, table: string, ref: string, columns: string[] | '*' = ['id']): Promise<R | undefined> {
  const find = (column: 'id' | 'name') => {
    const q = db.selectFrom(table);
    return (columns === '*' ? q.selectAll() : q.select(columns)).where(column, '=', ref).executeTakeFirst();
  };
  return ((await find('id')) ?? (await find('name'))) as R | undefined;
}
