// Upstream decodes request bodies with Go's encoding/json, which matches field names case-insensitively;
// its own CLI builds some bodies from untagged Go structs (`ziti edge create posture-check os` sends
// {"operatingSystems":[{"Type":"Windows","Versions":[...]}]}). For the resources that declare it, keys
// that differ from the schema's only in case are renamed before validation, at every depth.
import type { TSchema } from 'typebox';

type Json = unknown;

/** Properties of an object schema, or of every branch of a union (by lower-cased name). */
function propertiesOf(schema: TSchema | undefined): Map<string, [string, TSchema]> {
  const out = new Map<string, [string, TSchema]>();
  const visit = (s: TSchema | undefined) => {
    if (!s || typeof s !== 'object') return;
    const props = (s as { properties?: Record<string, TSchema> }).properties;
    if (props) for (const [name, sub] of Object.entries(props)) if (!out.has(name.toLowerCase())) out.set(name.toLowerCase(), [name, sub]);
    for (const k of ['anyOf', 'oneOf', 'allOf'] as const) for (const b of ((s as Record<string, TSchema[]>)[k] ?? [])) visit(b);
  };
  visit(schema);
  return out;
}

function itemsOf(schema: TSchema | undefined): TSchema | undefined {
  if (!schema) return undefined;
  const items = (schema as { items?: TSchema }).items;
  if (items) return items;
  for (const k of ['anyOf', 'oneOf'] as const) for (const b of ((schema as Record<string, TSchema[]>)[k] ?? [])) if ((b as { items?: TSchema }).items) return (b as { items: TSchema }).items;
  return undefined;
}

export function foldKeys(value: Json, schema: TSchema | undefined): Json {
  if (Array.isArray(value)) return value.map((v) => foldKeys(v, itemsOf(schema)));
  if (!value || typeof value !== 'object') return value;
  const props = propertiesOf(schema);
  if (!props.size) return value;
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(value as Record<string, Json>)) {
    const match = props.get(k.toLowerCase());
    const name = match && !(match[0] in (value as object)) ? match[0] : k;
    out[name] = foldKeys(v, match?.[1]);
  }
  return out;
}
