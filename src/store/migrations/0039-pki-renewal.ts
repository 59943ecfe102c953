import type { Kysely, Migration } from 'kysely';

// Certificates that renew themselves (issue 47, item 1; ziti#1155, #1994, #4116):
// - controllers.retired_certs: each controller's replaced server certificates whose keys may still have
//   signed unexpired tokens ([{certPem, retiredAt}] as JSON), so the other controllers on the database
//   (their API, their routers' data model, their JWKS) keep accepting those tokens after a renewal;
// - pki_intermediates: the intermediate CA the controllers of one database share (its key sealed with
//   the shared secrets key), each row naming the one it replaced: the controller that renews claims the
//   replacement (the unique `replaces`), the others adopt it from here;
// - an index on sessions' creation: a replaced key stays while service sessions made before the
//   replacement exist (their JWTs last as long as the session), asked once a minute while one waits.
export const pkiRenewal = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('controllers').addColumn('retired_certs', 'text', (c) => c.notNull().defaultTo('[]')).execute();
    await db.schema
      .createTable('pki_intermediates')
      .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('cert_pem', 'text', (c) => c.notNull())
      .addColumn('key_sealed', 'text', (c) => c.notNull())
      .addColumn('replaces', 'varchar(64)', (c) => c.unique())
      .addColumn('controller_id', 'varchar(64)', (c) => c.notNull())
      .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('sessions_created_at').on('sessions').column('created_at').execute();
  },
});
