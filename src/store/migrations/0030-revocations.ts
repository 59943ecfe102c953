import type { Kysely, Migration } from 'kysely';
import { baseEntity } from './columns.js';

// Revocations (upstream 2.x's /revocations): a JWT id, an API session or an identity whose tokens issued
// before `issued_before` no longer count, until `expires_at` (when every token it could name has expired).
export const revocations = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await baseEntity(db.schema.createTable('revocations'))
      .addColumn('type', 'varchar(16)', (c) => c.notNull())
      .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
      .addColumn('issued_before', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('revocations_expires_at').on('revocations').column('expires_at').execute();
  },
});
