import type { Kysely, Migration } from 'kysely';
import { baseEntity, bool, json } from './columns.js';

// MFA enrollments, external JWT signers, password lockout counters.
export const auth = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    let t = baseEntity(db.schema.createTable('mfa'))
      .addColumn('identity_id', 'varchar(64)', (c) => c.notNull().unique().references('identities.id').onDelete('cascade'))
      .addColumn('secret', 'text', (c) => c.notNull())
      // The last TOTP time step accepted: a code is good once (replay protection across controllers).
      .addColumn('last_step', 'integer', (c) => c.notNull().defaultTo(0));
    t = bool(t, 'is_verified');
    t = json(t, 'recovery_codes', '[]');
    await t.execute();

    t = baseEntity(db.schema.createTable('external_jwt_signers'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('cert_pem', 'text')
      .addColumn('fingerprint', 'varchar(128)')
      .addColumn('common_name', 'varchar(255)')
      .addColumn('not_before', 'varchar(32)')
      .addColumn('not_after', 'varchar(32)')
      .addColumn('jwks_endpoint', 'varchar(2048)')
      .addColumn('kid', 'varchar(255)')
      .addColumn('issuer', 'varchar(2048)', (c) => c.notNull())
      .addColumn('audience', 'varchar(2048)')
      .addColumn('claims_property', 'varchar(255)', (c) => c.notNull().defaultTo('sub'))
      .addColumn('client_id', 'varchar(255)')
      .addColumn('external_auth_url', 'varchar(2048)');
    t = bool(t, 'enabled');
    t = bool(t, 'use_external_id');
    t = json(t, 'scopes', '[]');
    await t.execute();

    await db.schema.alterTable('authenticators').addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('authenticators').addColumn('locked_until', 'varchar(32)').execute();
  },
});
