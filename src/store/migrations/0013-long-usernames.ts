import type { Kysely, Migration } from 'kysely';
import type { DialectHelpers } from '../dialect.js';
import { MAX_USERNAME_CHARS } from '../../model/schemas/common.js';

// The API document gives an authenticator's create username no length limit (only replace and patch
// say 4 to 100), and upstream accepts longer ones. The column was varchar(100); PostgreSQL enforces
// that, SQLite does not. Widened to the bound the unique index can hold (see MAX_USERNAME_CHARS).
export const longUsernames = (d: DialectHelpers): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    if (d.name !== 'postgres') return;
    for (const table of ['authenticators', 'enrollments']) {
      await db.schema.alterTable(table).alterColumn('username', (c) => c.setDataType(`varchar(${MAX_USERNAME_CHARS})`)).execute();
    }
  },
});
