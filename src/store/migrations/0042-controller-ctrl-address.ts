import type { Kysely, Migration } from 'kysely';

// Where each controller's control channel listens (tls:host:port, what routers put in ctrl.endpoints),
// kept with its row: with several controllers on one database every one of them shows all of them
// (/controllers ctrlAddress), and a router's config written by any of them lists them all.
export const controllerCtrlAddress = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('controllers').addColumn('ctrl_address', 'text').execute();
  },
});
