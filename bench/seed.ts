// Bulk rows for the benchmarks, written straight to the store (the API path is measured, not seeding).
// Identities are of type Default, the type upstream 1.x keeps (migration 0012 removed User and Device).
import { iso } from '../src/model/clock.js';
import { newId } from '../src/model/ids.js';
import { DEFAULT_AUTH_POLICY_ID } from '../src/model/resources/identities.js';
import type { Db } from '../src/store/db.js';

const ATTRS = ['web', 'db', 'eu', 'us', 'staff', 'contractor', 'prod', 'dev'];

/**
 * `count` identities in batches of 500. By default named user-NNNNNN with two of ATTRS each, one in 50
 * disabled; `o` names them and gives their role attributes otherwise (bench/rdm.ts: the Large model's
 * identities as bench/models.ts names them, none disabled).
 */
export async function seedIdentities(db: Db, count: number, progress: (done: number) => void = () => {}, o: { name?: (i: number) => string; roleAttributes?: (i: number) => string[]; disabled?: (i: number) => boolean } = {}) {
  const start = Date.now() - count * 1000;
  for (let done = 0; done < count; ) {
    const batch = Math.min(500, count - done);
    await db.transaction().execute(async (tx) => {
      const rows = Array.from({ length: batch }, (_, k) => {
        const i = done + k;
        const at = iso(new Date(start + i * 1000));
        return {
          id: newId(), name: o.name ? o.name(i) : `user-${String(i).padStart(6, '0')}`, typeId: 'Default', authPolicyId: DEFAULT_AUTH_POLICY_ID,
          isAdmin: 0, isDefaultAdmin: 0, disabled: (o.disabled ? o.disabled(i) : i % 50 === 0) ? 1 : 0, defaultHostingCost: i % 100,
          roleAttributes: JSON.stringify(o.roleAttributes ? o.roleAttributes(i) : [ATTRS[i % 8], ATTRS[(i * 7) % 8]].filter((v, j, a) => a.indexOf(v) === j)),
          tags: JSON.stringify({ env: i % 3 === 0 ? 'prod' : 'dev', shard: String(i % 16) }), createdAt: at, updatedAt: at,
        };
      });
      await tx.insertInto('identities').values(rows as never).execute();
      await tx.insertInto('entityTags').values(rows.flatMap((r) => Object.entries(JSON.parse(r.tags) as Record<string, string>).map(([tagKey, value]) => ({ entityId: r.id, tagKey, kind: 'string', value })))).execute();
      await tx.insertInto('entityRoleAttributes').values(rows.flatMap((r) => (JSON.parse(r.roleAttributes) as string[]).map((attribute) => ({ entityId: r.id, attribute })))).execute();
    });
    done += batch;
    progress(done);
  }
}

/** Services with role attributes, written straight to the store like the identities. */
export async function seedServices(db: Db, count: number) {
  const now = iso(new Date());
  for (let done = 0; done < count; done += 500) {
    const rows = Array.from({ length: Math.min(500, count - done) }, (_, k) => {
      const i = done + k;
      return { id: newId(), name: `svc-${String(i).padStart(5, '0')}`, encryptionRequired: 1, roleAttributes: JSON.stringify([ATTRS[i % 8]]), createdAt: now, updatedAt: now };
    });
    await db.transaction().execute(async (tx) => {
      await tx.insertInto('services').values(rows as never).execute();
      await tx.insertInto('entityRoleAttributes').values(rows.map((r) => ({ entityId: r.id, attribute: JSON.parse(r.roleAttributes)[0] as string }))).execute();
    });
  }
}

export const SEEDED_ATTRS = ATTRS;
