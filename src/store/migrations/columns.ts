// Column shorthands shared by migrations, so every table spells the base entity the same way.
import type { CreateTableBuilder } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type T = CreateTableBuilder<any, any>;

export function baseEntity(t: T): T {
  return t
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('tags', 'text', (c) => c.notNull().defaultTo('{}'));
}

export const bool = (t: T, name: string, dflt = 0): T => t.addColumn(name, 'integer', (c) => c.notNull().defaultTo(dflt));
export const json = (t: T, name: string, dflt: string): T => t.addColumn(name, 'text', (c) => c.notNull().defaultTo(dflt));
