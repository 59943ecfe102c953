// Keeps entity_tags and entity_role_attributes in step with an entity's tags and role attributes.
import type { Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** `fresh`: the entity was created in this transaction, so it has no rows to replace (one statement fewer per create). */
export async function indexTags(tx: AnyDb, entityId: string, tags: Record<string, unknown> | null | undefined, fresh = false) {
  if (!fresh) await tx.deleteFrom('entityTags').where('entityId', '=', entityId).execute();
  const rows = Object.entries(tags ?? {}).map(([tagKey, v]) => ({
    entityId,
    tagKey,
    kind: v === null ? 'null' : typeof v === 'boolean' ? 'bool' : 'string',
    value: v === null ? null : String(v),
  }));
  if (rows.length) await tx.insertInto('entityTags').values(rows).execute();
}

export async function indexRoleAttributes(tx: AnyDb, entityId: string, attributes: string[] | null | undefined, fresh = false) {
  if (!fresh) await tx.deleteFrom('entityRoleAttributes').where('entityId', '=', entityId).execute();
  const rows = [...new Set(attributes ?? [])].map((attribute) => ({ entityId, attribute }));
  if (rows.length) await tx.insertInto('entityRoleAttributes').values(rows).execute();
}

export async function unindexEntity(tx: AnyDb, entityId: string) {
  await tx.deleteFrom('entityTags').where('entityId', '=', entityId).execute();
  await tx.deleteFrom('entityRoleAttributes').where('entityId', '=', entityId).execute();
}
