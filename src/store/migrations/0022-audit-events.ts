import type { Kysely, Migration } from 'kysely';

// The stored audit (model/events/audit-store.ts): entity changes, logins, enrollments and admin
// recovery, each with the event as written to the events file (secrets never in it), kept for
// auditRetentionDays. Indexed for "who changed X, when" (by id or name) and for the retention prune.
export const auditEvents = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('audit_events')
      .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('at', 'varchar(40)', (c) => c.notNull())
      .addColumn('namespace', 'varchar(64)', (c) => c.notNull())
      .addColumn('event_type', 'varchar(32)', (c) => c.notNull())
      .addColumn('entity_type', 'varchar(64)')
      .addColumn('entity_id', 'varchar(64)')
      .addColumn('entity_name', 'varchar(255)')
      .addColumn('actor_id', 'varchar(64)')
      .addColumn('actor_name', 'varchar(255)')
      .addColumn('body', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_events_at').on('audit_events').column('at').execute();
    await db.schema.createIndex('audit_events_entity_id').on('audit_events').columns(['entity_id', 'at']).execute();
    await db.schema.createIndex('audit_events_entity_name').on('audit_events').columns(['entity_name', 'at']).execute();
    await db.schema.createIndex('audit_events_actor_id').on('audit_events').columns(['actor_id', 'at']).execute();
  },
});
