import type { Kysely, Migration } from 'kysely';

// The journal of a large import on SQLite (model/import-journal.ts): the import creates its entities in
// several short transactions, so that logins and other writes get the one write lock in between, and
// notes each entity it created here in the same transaction. A finished import deletes its notes when
// its last transaction commits; a failed one (at once) or a crashed one (at the next start, when its
// process is gone) deletes what its notes name, so the import stays all-or-nothing.
export const importJournal = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('import_runs')
      .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('pid', 'integer', (c) => c.notNull())
      .addColumn('started_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('import_journal')
      .addColumn('import_id', 'varchar(64)', (c) => c.notNull().references('import_runs.id').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('kind', 'varchar(64)', (c) => c.notNull())
      .addColumn('entity_id', 'varchar(64)', (c) => c.notNull())
      .addPrimaryKeyConstraint('import_journal_pk', ['import_id', 'seq'])
      .execute();
  },
});
