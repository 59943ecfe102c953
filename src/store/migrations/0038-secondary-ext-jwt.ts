import type { Kysely, Migration } from 'kysely';

// An auth policy's secondary.requireExtJwtSigner enforced (issue 44): an API session opened without a JWT
// from that signer owes one (ext_jwt_pending: the signer's id, null once given), as a session owes its TOTP
// code; an OIDC authorization request notes the signer its login must still be shown a JWT from.
export const secondaryExtJwt = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('api_sessions').addColumn('ext_jwt_pending', 'varchar(64)').execute();
    await db.schema.alterTable('oidc_auth_requests').addColumn('ext_jwt_signer', 'varchar(64)').execute();
  },
});
