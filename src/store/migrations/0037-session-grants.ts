import type { Kysely, Migration } from 'kysely';

// An access log that names the grant (edge#227): a service session keeps what granted it when it was
// made (its service policies and the posture checks that passed, as JSON), so the circuits it opens say
// so too without the policies being evaluated again on the data plane.
export const sessionGrants = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('sessions').addColumn('granted_by', 'text').execute();
  },
});
