import type { Kysely, Migration } from 'kysely';

// Identities' permissions, as upstream 2.x keeps them: a JSON list of names. `admin_readonly` makes an
// identity that is not an admin able to read everything an admin can and change nothing.
export const identityPermissions = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('identities').addColumn('permissions', 'text', (c) => c.notNull().defaultTo('[]')).execute();
  },
});
