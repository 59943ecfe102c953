import type { Kysely, Migration } from 'kysely';
import { baseEntity, bool, json } from './columns.js';

// Services (with their configs), routers (edge and transit, one table), the three policy kinds, and the
// denormalised policy state: which roles each policy lists (policy_roles) and which entities each side of
// each policy selects (policy_members). See src/model/policy/membership.ts.
export const servicesRoutersPolicies = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    let t = baseEntity(db.schema.createTable('services'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('max_idle_time_millis', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('terminator_strategy', 'varchar(255)', (c) => c.notNull().defaultTo('smartrouting'));
    t = bool(t, 'encryption_required', 1);
    t = json(t, 'role_attributes', '[]');
    await t.execute();

    // One config per config type per service; a config in use cannot be deleted.
    await db.schema
      .createTable('service_configs')
      .addColumn('service_id', 'varchar(64)', (c) => c.notNull().references('services.id').onDelete('cascade'))
      .addColumn('config_type_id', 'varchar(64)', (c) => c.notNull().references('config_types.id'))
      .addColumn('config_id', 'varchar(64)', (c) => c.notNull().references('configs.id'))
      .addPrimaryKeyConstraint('service_configs_pk', ['service_id', 'config_type_id'])
      .execute();
    await db.schema.createIndex('service_configs_config_id').on('service_configs').column('config_id').execute();

    // An identity's own choice of config for a service (overrides the service's config of that type).
    await db.schema
      .createTable('identity_service_configs')
      .addColumn('identity_id', 'varchar(64)', (c) => c.notNull().references('identities.id').onDelete('cascade'))
      .addColumn('service_id', 'varchar(64)', (c) => c.notNull().references('services.id').onDelete('cascade'))
      .addColumn('config_type_id', 'varchar(64)', (c) => c.notNull().references('config_types.id'))
      .addColumn('config_id', 'varchar(64)', (c) => c.notNull().references('configs.id'))
      .addPrimaryKeyConstraint('identity_service_configs_pk', ['identity_id', 'service_id', 'config_type_id'])
      .execute();
    await db.schema.createIndex('identity_service_configs_config_id').on('identity_service_configs').column('config_id').execute();
    await db.schema.createIndex('identity_service_configs_service_id').on('identity_service_configs').column('service_id').execute();

    t = baseEntity(db.schema.createTable('routers'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('cost', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('hostname', 'varchar(255)', (c) => c.notNull().defaultTo(''))
      .addColumn('fingerprint', 'varchar(128)', (c) => c.unique())
      .addColumn('cert_pem', 'text')
      .addColumn('server_cert_pem', 'text');
    t = bool(t, 'is_edge');
    t = bool(t, 'no_traversal');
    t = bool(t, 'disabled');
    t = bool(t, 'is_tunneler_enabled');
    t = bool(t, 'is_verified');
    t = json(t, 'role_attributes', '[]');
    t = json(t, 'app_data', '{}');
    t = json(t, 'supported_protocols', '{}');
    await t.execute();
    await db.schema.createIndex('routers_is_edge').on('routers').columns(['is_edge', 'created_at']).execute();

    // Router enrollments live with the identities' ones: one token table, one use-once rule.
    await db.schema.alterTable('enrollments').addColumn('router_id', 'varchar(64)', (c) => c.references('routers.id').onDelete('cascade')).execute();
    await db.schema.createIndex('enrollments_router_id').on('enrollments').column('router_id').unique().execute();

    // Posture checks: the type's own fields are kept as JSON in data.
    t = baseEntity(db.schema.createTable('posture_checks'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('type_id', 'varchar(32)', (c) => c.notNull());
    t = json(t, 'role_attributes', '[]');
    t = json(t, 'data', '{}');
    await t.execute();

    for (const [table, sides] of [
      ['edge_router_policies', ['identity_roles', 'edge_router_roles']],
      ['service_edge_router_policies', ['service_roles', 'edge_router_roles']],
      ['service_policies', ['identity_roles', 'service_roles', 'posture_check_roles']],
    ] as const) {
      t = baseEntity(db.schema.createTable(table))
        .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
        .addColumn('semantic', 'varchar(8)', (c) => c.notNull().defaultTo('AllOf'));
      if (table === 'service_policies') t = t.addColumn('type', 'varchar(8)', (c) => c.notNull());
      if (table === 'edge_router_policies') t = bool(t, 'is_system');
      for (const s of sides) t = json(t, s, '[]');
      await t.execute();
    }

    // The roles each policy lists, by side: finds the policies an entity might match without reading them all.
    await db.schema
      .createTable('policy_roles')
      .addColumn('policy_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('side', 'varchar(16)', (c) => c.notNull())
      .addColumn('role', 'varchar(300)', (c) => c.notNull())
      .addColumn('kind', 'varchar(16)', (c) => c.notNull())
      .addColumn('semantic', 'varchar(8)', (c) => c.notNull())
      .addPrimaryKeyConstraint('policy_roles_pk', ['policy_id', 'side', 'role'])
      .execute();
    await db.schema.createIndex('policy_roles_side_role').on('policy_roles').columns(['side', 'role', 'policy_id']).execute();

    // Which entities each side of each policy selects. kind names the policy kind (and a service policy's type).
    await db.schema
      .createTable('policy_members')
      .addColumn('policy_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('kind', 'varchar(16)', (c) => c.notNull())
      .addColumn('side', 'varchar(16)', (c) => c.notNull())
      .addColumn('entity_id', 'varchar(64)', (c) => c.notNull())
      .addPrimaryKeyConstraint('policy_members_pk', ['policy_id', 'side', 'entity_id'])
      .execute();
    await db.schema.createIndex('policy_members_entity').on('policy_members').columns(['entity_id', 'side', 'kind', 'policy_id']).execute();
  },
});
