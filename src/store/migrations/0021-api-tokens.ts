import type { Kysely, Migration } from 'kysely';
import { baseEntity, bool } from './columns.js';

// API tokens for automation: long-lived, revocable bearer tokens that act as an admin identity
// (model/resources/api-tokens.ts). Only the token's hash is kept; it goes with its identity.
export const apiTokens = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await bool(baseEntity(db.schema.createTable('api_tokens')), 'read_only')
      .addColumn('name', 'varchar(255)', (c) => c.notNull().unique())
      .addColumn('identity_id', 'varchar(64)', (c) => c.notNull().references('identities.id').onDelete('cascade'))
      .addColumn('token_hash', 'varchar(128)', (c) => c.notNull().unique())
      .addColumn('expires_at', 'varchar(32)')
      .addColumn('last_used_at', 'varchar(32)')
      .execute();
    await db.schema.createIndex('api_tokens_identity').on('api_tokens').column('identity_id').execute();
  },
});
