import type { Kysely, Migration } from 'kysely';

// Certificate authenticators' extension requests (upstream 2.x's POST /authenticators/{id}/request-extend):
// whether an extension (and a new key) is asked for and since when, whether the last extension rolled
// the key, and whether the last certificate login's chain resolved to the root.
export const authenticatorExtendRequests = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    for (const column of ['is_extend_requested', 'is_key_roll_requested', 'last_extend_rolled_keys', 'last_auth_resolved_to_root']) {
      await db.schema.alterTable('authenticators').addColumn(column, 'integer', (c) => c.notNull().defaultTo(0)).execute();
    }
    await db.schema.alterTable('authenticators').addColumn('extend_requested_at', 'varchar(32)').execute();
  },
});
