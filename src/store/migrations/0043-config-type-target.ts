import type { Kysely, Migration } from 'kysely';

// OpenZiti 2.1's config type `target` (service, router or other): what the type's configs are for. Set
// when the type is created and never changed; the types that exist before are for services, as upstream's
// own migration makes them.
export const configTypeTarget = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema.alterTable('config_types').addColumn('target', 'text', (c) => c.notNull().defaultTo('service')).execute();
  },
});
