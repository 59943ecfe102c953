// Our PATCH extension (not upstream's): add or remove role attributes and tags without restating the
// whole list. Upstream's `roleAttributes` and `tags` replace everything, so two admins each adding one
// attribute from what they last read would lose one of the two; these edits are applied to the row as it
// is inside the write transaction (locked on PostgreSQL), so both win.
import { sql } from 'kysely';
import { Type, type TSchema } from 'typebox';
import type { Tx } from '../store/db.js';
import type { DialectName } from '../store/dialect.js';
import type { Database } from '../store/schema.js';
import { fromJson } from '../store/json.js';
import { invalidField } from './errors.js';
import type { ResourceDecl, Row } from './resource.js';
import { TagValue } from './schemas/common.js';

const Items = (description: string) => Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 1000, description });

export const SET_EDIT_FIELDS = ['roleAttributesAdd', 'roleAttributesRemove', 'tagsAdd', 'tagsRemove'] as const;

/** The extension's body fields, documented as ours in the OpenAPI document. */
export const setEditProperties = {
  roleAttributesAdd: Type.Optional(Items('ztc extension: role attributes to add to the current ones (applied atomically on the server; not with roleAttributes)')),
  roleAttributesRemove: Type.Optional(Items('ztc extension: role attributes to remove from the current ones (absent ones are ignored; not with roleAttributes)')),
  tagsAdd: Type.Optional(
    Type.Unsafe<Record<string, string | boolean | null>>({
      type: 'object',
      additionalProperties: TagValue,
      maxProperties: 1000,
      description: 'ztc extension: tags to set (or overwrite) on top of the current ones (not with tags)',
    }),
  ),
  tagsRemove: Type.Optional(Items('ztc extension: names of tags to remove (absent ones are ignored; not with tags)')),
};

/** Whether a declaration's PATCH takes the extension: resources with role attributes. */
export const takesSetEdits = (decl: ResourceDecl) => !!decl.roleAttributes && !!decl.schemas.patch;

/** The PATCH body schema with the extension's fields next to upstream's own (which keep their meaning). */
export function patchWithSetEdits(patch: TSchema): TSchema {
  const s = patch as TSchema & { properties: Record<string, TSchema>; additionalProperties?: boolean; description?: string };
  return Type.Object({ ...s.properties, ...setEditProperties }, { additionalProperties: s.additionalProperties ?? false, ...(s.description ? { description: s.description } : {}) });
}

export const hasSetEdits = (input: Row) => SET_EDIT_FIELDS.some((f) => f in input);

/** 400 for a body mixing a whole-list field with its edits (which one should win is anyone's guess). */
export function checkSetEdits(decl: ResourceDecl, input: Row) {
  const roles = decl.roleAttributes ?? 'roleAttributes';
  if (roles in input && ('roleAttributesAdd' in input || 'roleAttributesRemove' in input)) {
    throw invalidField('roleAttributesAdd', `give either ${roles} (the whole list) or roleAttributesAdd/roleAttributesRemove (changes to it), not both`);
  }
  if ('tags' in input && ('tagsAdd' in input || 'tagsRemove' in input)) {
    throw invalidField('tagsAdd', 'give either tags (the whole map) or tagsAdd/tagsRemove (changes to it), not both');
  }
}

/** Hold the row until the transaction ends, so a concurrent edit reads what this one wrote (SQLite writes one at a time anyway). */
export async function lockRow(tx: Tx, dialect: DialectName, table: keyof Database, id: string) {
  if (dialect === 'postgres') await tx.selectFrom(table as never).select(sql.ref('id').as('id')).where(sql.ref('id'), '=', id).forUpdate().execute();
}

/**
 * The input with the edits turned into upstream's whole-list fields, computed from the current row:
 * removals after additions, so adding and removing the same value removes it.
 */
export function applySetEdits(decl: ResourceDecl, input: Row, existing: Row): Row {
  const out: Row = { ...input };
  for (const f of SET_EDIT_FIELDS) delete out[f];
  const roles = decl.roleAttributes!;
  if ('roleAttributesAdd' in input || 'roleAttributesRemove' in input) {
    const set = new Set<string>(fromJson<string[] | null>(existing[roles], []) ?? []);
    for (const a of (input.roleAttributesAdd as string[] | undefined) ?? []) set.add(a);
    for (const a of (input.roleAttributesRemove as string[] | undefined) ?? []) set.delete(a);
    out[roles] = [...set];
  }
  if ('tagsAdd' in input || 'tagsRemove' in input) {
    const tags: Row = { ...(fromJson<Row | null>(existing.tags, {}) ?? {}), ...((input.tagsAdd as Row | undefined) ?? {}) };
    for (const k of (input.tagsRemove as string[] | undefined) ?? []) delete tags[k];
    out.tags = tags;
  }
  return out;
}
