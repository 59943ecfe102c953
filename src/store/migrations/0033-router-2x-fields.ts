import type { Kysely, Migration } from 'kysely';

// Routers' fields of upstream 2.x: the capability mask a router's hello announced (header 1002, kept as a
// decimal string: an int64 whose bit 62 a 2.1 router sets), the control-channel listeners a controller
// could dial it at (ctrlChanListeners: address -> groups), and the router-targeted configs it names.
export const router2xFields = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('routers').addColumn('capabilities_mask', 'varchar(24)').execute();
    await db.schema.alterTable('routers').addColumn('ctrl_chan_listeners', 'text', (c) => c.notNull().defaultTo('{}')).execute();
    await db.schema.alterTable('routers').addColumn('configs', 'text', (c) => c.notNull().defaultTo('[]')).execute();
  },
});
