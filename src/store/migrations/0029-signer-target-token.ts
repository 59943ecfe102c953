import type { Kysely, Migration } from 'kysely';

// External JWT signers' fields of upstream 2.x that are plain stored values: which token of the provider
// a client presents (targetToken, ACCESS or ID) and the claims an enrolment by JWT would name the identity
// and its attributes from. Existing signers get upstream's defaults.
export const signerTargetToken = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('external_jwt_signers').addColumn('target_token', 'varchar(16)', (c) => c.notNull().defaultTo('ACCESS')).execute();
    await db.schema.alterTable('external_jwt_signers').addColumn('enroll_name_claims_selector', 'varchar(1024)', (c) => c.notNull().defaultTo('/sub')).execute();
    await db.schema.alterTable('external_jwt_signers').addColumn('enroll_attribute_claims_selector', 'varchar(1024)', (c) => c.notNull().defaultTo('')).execute();
  },
});
