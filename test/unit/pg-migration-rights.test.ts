// PostgreSQL 15 and later: only a database's owner may create tables in its schema public. A controller
// started as a user without that right says which step failed and how to grant it (not a stack trace).
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MigrationFailed, openStore } from '../../src/store/db.js';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const onPostgres = !!process.env.ZTC_TEST_DB;

describe.skipIf(!onPostgres)('a database user that may not create tables', () => {
  it('is told what failed and how to grant it', async () => {
    const url = new URL(await testDatabase());
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    const role = `ztc_limited_${Math.random().toString(36).slice(2, 8)}`;
    try {
      await admin.query(`create role ${role} login password 'limited-pass-1'`);
      const { rows } = await admin.query<{ v: number }>(`select current_setting('server_version_num')::int as v`);
      // Before PostgreSQL 15 every user could create tables in public: take the right away explicitly.
      if (rows[0].v < 150000) await admin.query('revoke create on schema public from public');
      const limited = new URL(url.toString());
      limited.username = role;
      limited.password = 'limited-pass-1';
      const err = await openStore({ url: limited.toString(), file: `${tempDataDir()}/unused.db` }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(MigrationFailed);
      expect((err as Error).message).toMatch(/^the database could not be brought up to date \(.+\): permission denied for schema public: the database user must be allowed to create tables: make it the database's owner \(createdb -O USER, or ALTER DATABASE NAME OWNER TO USER\), or GRANT CREATE ON SCHEMA public TO USER$/);
    } finally {
      await admin.query(`drop owned by ${role}`).catch(() => {});
      await admin.query(`drop role if exists ${role}`).catch(() => {});
      await admin.end();
    }
  });
});
