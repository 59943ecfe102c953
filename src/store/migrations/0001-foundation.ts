import type { Kysely, Migration } from 'kysely';
import type { DialectHelpers } from '../dialect.js';
import { baseEntity, bool, json } from './columns.js';

export const foundation = (_d: DialectHelpers): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await baseEntity(db.schema.createTable('identity_types'))
      .addColumn('name', 'varchar(100)', (c) => c.notNull().unique())
      .execute();

    let t = baseEntity(db.schema.createTable('auth_policies')).addColumn('name', 'varchar(255)', (c) => c.notNull().unique());
    t = json(t, 'primary_json', '{}');
    t = json(t, 'secondary_json', '{}');
    t = bool(t, 'is_system');
    await t.execute();

    t = baseEntity(db.schema.createTable('identities'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('type_id', 'varchar(64)', (c) => c.notNull().references('identity_types.id'))
      .addColumn('auth_policy_id', 'varchar(64)', (c) => c.notNull().references('auth_policies.id'))
      .addColumn('external_id', 'varchar(255)', (c) => c.unique())
      .addColumn('default_hosting_precedence', 'varchar(16)', (c) => c.notNull().defaultTo('default'))
      .addColumn('default_hosting_cost', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('disabled_at', 'varchar(32)')
      .addColumn('disabled_until', 'varchar(32)');
    t = bool(t, 'is_admin');
    t = bool(t, 'is_default_admin');
    t = bool(t, 'disabled');
    for (const [name, dflt] of [
      ['service_hosting_costs', '{}'],
      ['service_hosting_precedences', '{}'],
      ['app_data', '{}'],
      ['role_attributes', '[]'],
      ['env_info', '{}'],
      ['sdk_info', '{}'],
    ]) t = json(t, name, dflt);
    await t.execute();
    await db.schema.createIndex('identities_created_at').on('identities').column('created_at').execute();
    await db.schema.createIndex('identities_type_id').on('identities').column('type_id').execute();
    await db.schema.createIndex('identities_auth_policy_id').on('identities').column('auth_policy_id').execute();

    t = baseEntity(db.schema.createTable('authenticators'))
      .addColumn('identity_id', 'varchar(64)', (c) => c.notNull().references('identities.id').onDelete('cascade'))
      .addColumn('method', 'varchar(16)', (c) => c.notNull())
      .addColumn('username', 'varchar(100)', (c) => c.unique())
      .addColumn('password_hash', 'varchar(255)')
      .addColumn('cert_pem', 'text')
      .addColumn('fingerprint', 'varchar(128)', (c) => c.unique());
    t = bool(t, 'is_issued_by_network');
    await t.execute();
    // One authenticator per method per identity (upstream: MAX_AUTHENTICATOR_METHODS_REACHED).
    await db.schema.createIndex('authenticators_identity_method').on('authenticators').columns(['identity_id', 'method']).unique().execute();

    t = baseEntity(db.schema.createTable('api_sessions'))
      .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
      .addColumn('identity_id', 'varchar(64)', (c) => c.notNull().references('identities.id').onDelete('cascade'))
      .addColumn('authenticator_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('ip_address', 'varchar(64)', (c) => c.notNull().defaultTo(''))
      .addColumn('last_activity_at', 'varchar(32)', (c) => c.notNull());
    t = json(t, 'config_types', '[]');
    t = bool(t, 'is_mfa_required');
    t = bool(t, 'is_mfa_complete');
    t = bool(t, 'is_cert_extendable');
    await t.execute();
    await db.schema.createIndex('api_sessions_identity_id').on('api_sessions').column('identity_id').execute();
    await db.schema.createIndex('api_sessions_last_activity_at').on('api_sessions').column('last_activity_at').execute();
  },
});
