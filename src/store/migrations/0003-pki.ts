import type { Kysely, Migration } from 'kysely';
import { baseEntity, bool, json } from './columns.js';

// Third-party CAs, outstanding enrollments, certificate extension state, API-session certificates.
export const pki = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    let t = baseEntity(db.schema.createTable('cas'))
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('cert_pem', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'varchar(128)', (c) => c.notNull().unique())
      .addColumn('verification_token', 'varchar(64)', (c) => c.notNull())
      .addColumn('identity_name_format', 'varchar(255)', (c) => c.notNull())
      .addColumn('external_id_claim', 'text');
    for (const b of ['is_verified', 'is_auto_ca_enrollment_enabled', 'is_ott_ca_enrollment_enabled', 'is_auth_enabled']) t = bool(t, b);
    t = json(t, 'identity_roles', '[]');
    await t.execute();

    await baseEntity(db.schema.createTable('enrollments'))
      .addColumn('identity_id', 'varchar(64)', (c) => c.references('identities.id').onDelete('cascade'))
      .addColumn('method', 'varchar(16)', (c) => c.notNull())
      .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
      .addColumn('jwt', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('ca_id', 'varchar(64)', (c) => c.references('cas.id').onDelete('cascade'))
      .addColumn('username', 'varchar(100)')
      .execute();
    await db.schema.createIndex('enrollments_identity_method').on('enrollments').columns(['identity_id', 'method']).unique().execute();

    await db.schema.alterTable('authenticators').addColumn('ca_id', 'varchar(64)', (c) => c.references('cas.id').onDelete('cascade')).execute();
    await db.schema.alterTable('authenticators').addColumn('unverified_cert_pem', 'text').execute();
    await db.schema.alterTable('authenticators').addColumn('unverified_fingerprint', 'varchar(128)').execute();
    await db.schema.createIndex('authenticators_ca_id').on('authenticators').column('ca_id').execute();

    await baseEntity(db.schema.createTable('api_session_certificates'))
      .addColumn('api_session_id', 'varchar(64)', (c) => c.notNull().references('api_sessions.id').onDelete('cascade'))
      .addColumn('cert_pem', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'varchar(128)', (c) => c.notNull().unique())
      .addColumn('subject', 'varchar(255)', (c) => c.notNull())
      .addColumn('valid_from', 'varchar(32)', (c) => c.notNull())
      .addColumn('valid_to', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('api_session_certificates_session').on('api_session_certificates').column('api_session_id').execute();
  },
});
