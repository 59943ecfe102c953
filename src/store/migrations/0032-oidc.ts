import type { Kysely, Migration } from 'kysely';
import { bool, json } from './columns.js';

// The OIDC provider (model/auth/oidc/): an authorization request lives from /oidc/authorize until its code
// is exchanged (minutes), in the database so any controller of a shared database can finish it; only the
// code's hash is kept, and a used code is remembered until the request is swept so that a replay ends the
// API session the first use opened. An API session opened through OIDC (a JWT API session) ends at
// `expires_at` (its latest refresh token's expiry) instead of after the idle timeout.
export const oidc = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('api_sessions').addColumn('expires_at', 'varchar(32)').execute();
    let t = db.schema
      .createTable('oidc_auth_requests')
      .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('client_id', 'varchar(32)', (c) => c.notNull())
      .addColumn('redirect_uri', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('nonce', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('code_challenge', 'varchar(128)', (c) => c.notNull())
      .addColumn('remote_address', 'varchar(64)', (c) => c.notNull().defaultTo(''))
      .addColumn('requested_method', 'varchar(16)', (c) => c.notNull().defaultTo(''))
      .addColumn('identity_id', 'varchar(64)')
      .addColumn('authenticator_id', 'varchar(64)')
      .addColumn('auth_time', 'varchar(32)')
      .addColumn('cert_fingerprint', 'varchar(64)')
      .addColumn('sdk_info', 'text')
      .addColumn('env_info', 'text')
      .addColumn('csr_pem', 'text')
      .addColumn('code_hash', 'varchar(64)')
      .addColumn('code_expires_at', 'varchar(32)')
      .addColumn('code_used_at', 'varchar(32)')
      .addColumn('api_session_id', 'varchar(64)');
    t = json(t, 'scopes', '[]');
    t = json(t, 'config_types', '[]');
    t = json(t, 'amr', '[]');
    t = bool(t, 'totp_required');
    t = bool(t, 'totp_enrolled');
    t = bool(t, 'is_cert_extendable');
    await t.execute();
    await db.schema.createIndex('oidc_auth_requests_code_hash').on('oidc_auth_requests').column('code_hash').unique().execute();
    await db.schema.createIndex('oidc_auth_requests_expires_at').on('oidc_auth_requests').column('expires_at').execute();
    await db.schema.createIndex('api_sessions_expires_at').on('api_sessions').column('expires_at').execute();
  },
});
