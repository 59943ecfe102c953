import type { Kysely, Migration } from 'kysely';

// The integrity run's lock gets an owner and a heartbeat, so a run whose process died is taken over
// at once (same host, process gone) or when its heartbeat stops (another host), not after a fixed time.
export const integrityRunOwner = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('integrity_runs').addColumn('owner', 'varchar(300)').execute();
    await db.schema.alterTable('integrity_runs').addColumn('heartbeat_at', 'varchar(32)').execute();
  },
});
