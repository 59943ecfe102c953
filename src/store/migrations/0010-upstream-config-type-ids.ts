import type { Kysely, Migration } from 'kysely';
import { BUILTIN_CONFIG_TYPE_IDS } from '../../model/config-schemas.js';

// Databases made before the built-in config types took upstream's fixed ids (see BUILTIN_CONFIG_TYPE_IDS)
// had them under their names. Each is moved to its upstream id with everything that points at it; the
// row is copied under a placeholder name first, because both the old id and the name are referenced or
// unique while the references move. A fresh database has no rows yet: bootstrap writes the new ids.
export const upstreamConfigTypeIds = (): Migration => ({
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    for (const [name, id] of Object.entries(BUILTIN_CONFIG_TYPE_IDS)) {
      if (id === name) continue;
      const old = await db.selectFrom('config_types').selectAll().where('id', '=', name).executeTakeFirst();
      if (!old) continue;
      await db.insertInto('config_types').values({ ...old, id, name: `${name} (moving)` }).execute();
      for (const table of ['configs', 'service_configs', 'identity_service_configs']) {
        await db.updateTable(table).set({ config_type_id: id }).where('config_type_id', '=', name).execute();
      }
      for (const table of ['entity_tags', 'entity_role_attributes']) {
        await db.updateTable(table).set({ entity_id: id }).where('entity_id', '=', name).execute();
      }
      await db.deleteFrom('config_types').where('id', '=', name).execute();
      await db.updateTable('config_types').set({ name }).where('id', '=', id).execute();
    }
  },
});
