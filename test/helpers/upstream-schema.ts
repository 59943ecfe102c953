// Checks an answer against a definition of upstream's OpenAPI (Swagger 2) documents, as a strict
// generated client would read it: required properties present, values of the declared type, and null
// only where the definition says x-nullable (Go omits unset optional pointers; it never sends null).
import fs from 'node:fs';
import path from 'node:path';

type Schema = Record<string, any>;
export type SwaggerDoc = { paths: Record<string, Record<string, any>>; definitions: Record<string, Schema> };

/** Upstream's documents (../shared/reference/edge-api beside the project), when this machine has them. */
export function upstreamDocs(): { client: SwaggerDoc; management: SwaggerDoc } | undefined {
  const dir = process.env.ZTC_UPSTREAM_API_DIR ?? path.resolve(import.meta.dirname, '../../../shared/reference/edge-api');
  const read = (n: string) => JSON.parse(fs.readFileSync(path.join(dir, `${n}.json`), 'utf8')) as SwaggerDoc;
  if (!fs.existsSync(path.join(dir, 'management.json'))) return undefined;
  return { client: read('client'), management: read('management') };
}

function deref(doc: SwaggerDoc, s: Schema | undefined): Schema | undefined {
  for (let i = 0; s?.$ref && i < 64; i++) s = doc.definitions[String(s.$ref).replace('#/definitions/', '')];
  return s;
}

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Every way `value` departs from `schema`, each as "path: what". */
export function conformance(doc: SwaggerDoc, schema: Schema | undefined, value: unknown, at = '$', out: string[] = []): string[] {
  const s = deref(doc, schema);
  if (!s || out.length > 20) return out;
  for (const part of s.allOf ?? []) conformance(doc, part, value, at, out);
  if (value === undefined) return out;
  // A polymorphic definition: the value must also match the subtype its discriminator names.
  const disc = s.discriminator as string | undefined;
  if (disc && value && typeof value === 'object' && !Array.isArray(value)) {
    const kind = (value as Record<string, unknown>)[disc];
    const sub = Object.entries(doc.definitions).find(([, d]) => d['x-class'] === kind && (d.allOf ?? []).some((p: Schema) => deref(doc, p) === s));
    if (!sub) out.push(`${at}.${disc}: '${String(kind)}' names no subtype`);
    else conformance(doc, { ...sub[1], allOf: (sub[1].allOf as Schema[]).filter((p) => deref(doc, p) !== s) }, value, at, out);
  }
  if (value === null) {
    const typed = s.type || s.properties || s.allOf || s.items;
    if (typed && s['x-nullable'] !== true) out.push(`${at}: null where the definition is not nullable`);
    return out;
  }
  const want = s.type as string | undefined;
  const got = typeOf(value);
  if (want === 'object' || (!want && s.properties)) {
    if (got !== 'object') return out.push(`${at}: expected an object, got ${got}`), out;
    const obj = value as Record<string, unknown>;
    for (const r of s.required ?? []) if (!(r in obj)) out.push(`${at}.${r}: required but absent`);
    for (const [k, sub] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) conformance(doc, sub, obj[k], `${at}.${k}`, out);
    if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      for (const [k, v] of Object.entries(obj)) if (!s.properties?.[k]) conformance(doc, s.additionalProperties, v, `${at}.${k}`, out);
    }
  } else if (want === 'array') {
    if (got !== 'array') return out.push(`${at}: expected an array, got ${got}`), out;
    (value as unknown[]).forEach((v, i) => conformance(doc, s.items, v, `${at}[${i}]`, out));
  } else if (want === 'string') {
    if (got !== 'string') out.push(`${at}: expected a string, got ${got}`);
  } else if (want === 'integer' || want === 'number') {
    if (got !== 'number') out.push(`${at}: expected a number, got ${got}`);
  } else if (want === 'boolean') {
    if (got !== 'boolean') out.push(`${at}: expected a boolean, got ${got}`);
  }
  return out;
}
