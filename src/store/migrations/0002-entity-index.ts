import type { Kysely, Migration } from 'kysely';

// Indexed copies of every entity's tags and role attributes, so filters and role matching use an
// index instead of parsing JSON in every row. entity_id is any entity's id (ids are unique across
// tables); rows are written in the same transaction as the entity and removed with it.
export const entityIndex = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('entity_role_attributes')
      .addColumn('entity_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('attribute', 'varchar(255)', (c) => c.notNull())
      .addPrimaryKeyConstraint('entity_role_attributes_pk', ['entity_id', 'attribute'])
      .execute();
    await db.schema.createIndex('entity_role_attributes_attribute').on('entity_role_attributes').columns(['attribute', 'entity_id']).execute();
    await db.schema
      .createTable('entity_tags')
      .addColumn('entity_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('tag_key', 'varchar(255)', (c) => c.notNull())
      .addColumn('kind', 'varchar(8)', (c) => c.notNull())
      .addColumn('value', 'text')
      .addPrimaryKeyConstraint('entity_tags_pk', ['entity_id', 'tag_key'])
      .execute();
    await db.schema.createIndex('entity_tags_key_value').on('entity_tags').columns(['tag_key', 'kind', 'value', 'entity_id']).execute();
  },
});
