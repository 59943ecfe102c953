import type { Kysely, Migration } from 'kysely';

// The data plane: a router is online while the controller running it keeps `online_until` in the future
// (refreshed while it serves, cleared when it stops, left to lapse when the process dies: several
// controllers on one database see each other's routers). A router run by a controller (its embedded
// edge router) names it: it belongs to that controller, not to the exported model. Terminators made by
// hosting SDKs name the hosting identity. API sessions keep their token sealed beside its hash: upstream
// routers are told the token itself.
export const dataPlane = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('routers').addColumn('online_until', 'varchar(32)').execute();
    await db.schema.alterTable('routers').addColumn('controller_id', 'varchar(64)').execute();
    await db.schema.alterTable('terminators').addColumn('host_id', 'varchar(64)').execute();
    await db.schema.alterTable('api_sessions').addColumn('token_sealed', 'text').execute();
  },
});
