import type { Kysely, Migration } from 'kysely';

// Enrolment by an external JWT (upstream 2.x's POST /enroll/token): whether a signer's JWTs may create
// identities that log in with the signer's JWTs (token) or with a certificate from a CSR (cert), and the
// auth policy those identities get (null: the default policy).
export const signerEnrollment = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('external_jwt_signers').addColumn('enroll_to_cert_enabled', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('external_jwt_signers').addColumn('enroll_to_token_enabled', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await db.schema.alterTable('external_jwt_signers').addColumn('enroll_auth_policy_id', 'varchar(64)').execute();
  },
});
