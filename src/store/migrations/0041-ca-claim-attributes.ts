import type { Kysely, Migration } from 'kysely';

// Role attributes from certificate claims (ztc's, for ziti#827): a CA's rules that turn claims of the
// certificates it issued (SAN URIs, emails, DNS names, subject fields) into role attributes, and per
// identity the attributes those rules gave it (so a later login removes only those, never an admin's).
export const caClaimAttributes = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('cas').addColumn('role_attribute_claims', 'text', (c) => c.notNull().defaultTo('[]')).execute();
    await db.schema.alterTable('identities').addColumn('claim_role_attributes', 'text', (c) => c.notNull().defaultTo('[]')).execute();
  },
});
