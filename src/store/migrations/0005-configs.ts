import type { Kysely, Migration } from 'kysely';
import { baseEntity, json } from './columns.js';

// Config types (a JSON schema each) and configs (data that matches its type's schema).
export const configs = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    let t = baseEntity(db.schema.createTable('config_types')).addColumn('name', 'varchar(255)', (c) => c.notNull().unique());
    t = json(t, 'schema', '{}');
    await t.execute();
    t = baseEntity(db.schema.createTable('configs'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('config_type_id', 'varchar(64)', (c) => c.notNull().references('config_types.id'));
    t = json(t, 'data', '{}');
    await t.execute();
    await db.schema.createIndex('configs_config_type_id').on('configs').column('config_type_id').execute();
  },
});
