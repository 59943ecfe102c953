import type { Kysely, Migration } from 'kysely';

// A batched import is done when its last transaction marks its run finished (model/import-journal.ts);
// its notes are deleted after, a few thousand a transaction, rather than all in that transaction.
export const importFinished = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('import_runs').addColumn('finished_at', 'varchar(32)').execute();
  },
});
