import type { Kysely, Migration } from 'kysely';

// Sessions keep their token sealed (as TOTP secrets are) beside its hash: clients read sessions back
// with their token (upstream's sessionDetail requires it), while presented tokens are still looked up
// by hash. Sessions made before this have no sealed token and answer an empty one.
export const sessionTokens = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('sessions').addColumn('token_sealed', 'text').execute();
  },
});
