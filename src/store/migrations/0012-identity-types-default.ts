import type { Kysely, Migration } from 'kysely';

// Upstream 1.x folded the User, Device and Service identity types into Default (only Default and Router
// remain). Identities of the old types become Default and the old type rows go, so /identity-types and
// `type = "Default"` filters answer as upstream's do. A fresh database has no rows yet: bootstrap seeds
// only the two types.
const OLD = ['User', 'Device', 'Service'];

export const identityTypesDefault = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    const old = await db.selectFrom('identity_types').select('id').where('id', 'in', OLD).execute();
    if (old.length === 0) return;
    const now = new Date().toISOString();
    await db.insertInto('identity_types')
      .values({ id: 'Default', name: 'Default', created_at: now, updated_at: now, tags: '{}' })
      .onConflict((oc) => oc.doNothing())
      .execute();
    await db.updateTable('identities').set({ type_id: 'Default' }).where('type_id', 'in', OLD).execute();
    await db.deleteFrom('identity_types').where('id', 'in', OLD).execute();
  },
});
