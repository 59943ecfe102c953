import type { Kysely, Migration } from 'kysely';

// A terminator an upstream router's SDK made keeps what routing to it needs across a restart of the
// controller (issue 43, item 3): the Bind's service session (its token, for telling routers the session
// ended, and its liveness) and the peer data the router sent (the host's public key). Upstream keeps
// terminators and validates them with their router when it reconnects; so does ztc now.
export const terminatorSessions = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('terminators').addColumn('session_id', 'varchar(64)').execute();
    await db.schema.alterTable('terminators').addColumn('peer_data', 'text').execute();
  },
});
