import type { Kysely, Migration } from 'kysely';
import type { CreateTableBuilder } from 'kysely';
import { baseEntity, bool, json } from './columns.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type T = CreateTableBuilder<any, any>;

// Sessions (Dial/Bind, ended with their API session), terminators, posture responses and failed
// service requests, the service-change marker, identity traces, the controllers registry, and the
// state of the one integrity run allowed at a time.
export const sessionsPostureMaintenance = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('posture_checks').addColumn('version', 'integer', (c) => c.notNull().defaultTo(1)).execute();

    await baseEntity(db.schema.createTable('sessions'))
      .addColumn('api_session_id', 'varchar(64)', (c) => c.notNull().references('api_sessions.id').onDelete('cascade'))
      .addColumn('identity_id', 'varchar(64)', (c) => c.notNull().references('identities.id').onDelete('cascade'))
      .addColumn('service_id', 'varchar(64)', (c) => c.notNull().references('services.id').onDelete('cascade'))
      .addColumn('type', 'varchar(8)', (c) => c.notNull())
      .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
      .execute();
    await db.schema.createIndex('sessions_api_session_id').on('sessions').column('api_session_id').execute();
    await db.schema.createIndex('sessions_identity_id').on('sessions').column('identity_id').execute();
    await db.schema.createIndex('sessions_service_id').on('sessions').column('service_id').execute();

    await baseEntity(db.schema.createTable('terminators'))
      .addColumn('service_id', 'varchar(64)', (c) => c.notNull().references('services.id').onDelete('cascade'))
      .addColumn('router_id', 'varchar(64)', (c) => c.notNull().references('routers.id').onDelete('cascade'))
      .addColumn('binding', 'varchar(255)', (c) => c.notNull())
      .addColumn('address', 'varchar(1024)', (c) => c.notNull())
      .addColumn('identity', 'varchar(255)', (c) => c.notNull().defaultTo(''))
      .addColumn('identity_secret', 'text')
      .addColumn('cost', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('precedence', 'varchar(16)', (c) => c.notNull().defaultTo('default'))
      .execute();
    await db.schema.createIndex('terminators_service_id').on('terminators').column('service_id').execute();
    await db.schema.createIndex('terminators_router_id').on('terminators').column('router_id').execute();

    // The last response of each posture check, per API session.
    let t: T = db.schema
      .createTable('posture_responses')
      .addColumn('api_session_id', 'varchar(64)', (c) => c.notNull().references('api_sessions.id').onDelete('cascade'))
      .addColumn('check_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('type_id', 'varchar(32)', (c) => c.notNull())
      .addColumn('identity_id', 'varchar(64)', (c) => c.notNull().references('identities.id').onDelete('cascade'))
      .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
      .addPrimaryKeyConstraint('posture_responses_pk', ['api_session_id', 'check_id']);
    t = json(t, 'data', '{}');
    await t.execute();
    await db.schema.createIndex('posture_responses_identity_id').on('posture_responses').column('identity_id').execute();

    t = db.schema
      .createTable('failed_service_requests')
      .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('identity_id', 'varchar(64)', (c) => c.notNull().references('identities.id').onDelete('cascade'))
      .addColumn('api_session_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('service_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('service_name', 'varchar(255)', (c) => c.notNull())
      .addColumn('session_type', 'varchar(8)', (c) => c.notNull())
      .addColumn('at', 'varchar(32)', (c) => c.notNull());
    t = json(t, 'policy_failures', '[]');
    await t.execute();
    await db.schema.createIndex('failed_service_requests_identity').on('failed_service_requests').columns(['identity_id', 'at']).execute();

    // Markers clients poll: when anything that shapes service lists last changed.
    await db.schema
      .createTable('change_markers')
      .addColumn('name', 'varchar(32)', (c) => c.primaryKey())
      .addColumn('changed_at', 'varchar(32)', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('identity_traces')
      .addColumn('identity_id', 'varchar(64)', (c) => c.primaryKey().references('identities.id').onDelete('cascade'))
      .addColumn('trace_id', 'varchar(255)', (c) => c.notNull().defaultTo(''))
      .addColumn('channels', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('until', 'varchar(32)', (c) => c.notNull())
      .execute();

    // Every controller serving this database registers itself and keeps a heartbeat.
    t = baseEntity(db.schema.createTable('controllers'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull())
      .addColumn('cert_pem', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'varchar(128)', (c) => c.notNull())
      .addColumn('last_joined_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('last_seen_at', 'varchar(32)', (c) => c.notNull());
    t = json(t, 'api_addresses', '{}');
    await t.execute();

    // The integrity run: one row; a run starts only by flipping in_progress from 0 (any controller).
    t = db.schema
      .createTable('integrity_runs')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('started_at', 'varchar(32)')
      .addColumn('ended_at', 'varchar(32)')
      .addColumn('error', 'text');
    t = bool(t, 'in_progress');
    t = bool(t, 'fixing_errors');
    t = bool(t, 'too_many_errors');
    t = json(t, 'results', '[]');
    await t.execute();
    await db.insertInto('integrity_runs').values({ id: 1 }).execute();
  },
});
