// The request validators (ajv) and response serializers (fast-json-stringify) of every route, compiled
// on first use and kept for the process. The route schemas are the same constant declarations in every
// app the process builds, so one compiled function per distinct schema serves them all: the tests build
// hundreds of apps in one process, the CLI's local mode one app per API, a server one.
import serializerSelector from '@fastify/fast-json-stringify-compiler';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

type Compiled = ((...args: never[]) => unknown) & { errors?: unknown };

/**
 * Bodies are validated strictly (no type coercion); query strings and paths are text, so coerced.
 * validateSchema off: the schemas are our own declarations (checked by the OpenAPI tests), and checking
 * them against ajv's meta-schema first cost a compile of the meta-schema per instance (~30 ms).
 */
const ajvs = {
  strict: addFormats.default(new Ajv.default({ allErrors: false, coerceTypes: false, useDefaults: false, strict: false, validateSchema: false })),
  coercing: addFormats.default(new Ajv.default({ allErrors: false, coerceTypes: 'array', useDefaults: true, strict: false, validateSchema: false })),
};

const validators = new Map<string, Compiled>();
const serializers = new Map<string, Compiled>();

/**
 * A compiled function made on its first call. The wrapper passes on ajv's `errors`, which fastify reads
 * from the function after a failed validation (set by the call just made: validation is synchronous).
 */
function lazy<F extends Compiled>(make: () => F): F {
  let fn: F | undefined;
  const wrapper = ((...args: Parameters<F>) => {
    fn ??= make();
    const out = fn(...args);
    (wrapper as Compiled).errors = fn.errors;
    return out;
  }) as F;
  return wrapper;
}

function cached<F extends Compiled>(cache: Map<string, Compiled>, key: string, make: () => F): F {
  let fn = cache.get(key) as F | undefined;
  if (!fn) cache.set(key, (fn = make()));
  return fn;
}

/** fastify's validatorCompiler. */
export function compileValidator({ schema, httpPart }: { schema: unknown; httpPart?: string }) {
  const ajv = httpPart === 'body' ? ajvs.strict : ajvs.coercing;
  return lazy(() => cached(validators, `${ajv === ajvs.strict ? 'body' : 'text'} ${JSON.stringify(schema)}`, () => ajv.compile(schema as object) as Compiled));
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * 'ignored': a JSON body's fields its schema does not declare are dropped before it is validated, as
     * upstream's Go decoding drops them (its clients send the fields of newer controllers: 2.x's CLI,
     * ZAC). The served OpenAPI document then shows the body without additionalProperties: false.
     */
    unknownFields?: 'ignored';
  }
}

/** Route config of a route whose body's undeclared fields are dropped, not refused. */
export const IGNORES_UNKNOWN_FIELDS = { unknownFields: 'ignored' } as const;

type JsonSchema = {
  properties?: Record<string, JsonSchema>;
  patternProperties?: Record<string, JsonSchema>;
  additionalProperties?: unknown;
  items?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
};
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * Deletes from `value`, in place, the properties of every object the schema closes (additionalProperties
 * false) that it does not declare, at any depth. For a union, a property is kept when any closed branch
 * declares it (the validation that follows then picks the branch), and is followed down only where the
 * branches agree on its schema. Returns the paths dropped (`a.b`, `list.0.c`).
 */
export function dropUnknownFields(schema: unknown, value: unknown, at = '', dropped: string[] = []): string[] {
  if (!isObject(schema) || !value || typeof value !== 'object') return dropped;
  const s = schema as JsonSchema;
  for (const part of s.allOf ?? []) dropUnknownFields(part, value, at, dropped);
  const branches = [...(s.anyOf ?? []), ...(s.oneOf ?? [])].filter(isObject) as JsonSchema[];
  if (branches.length) {
    const fitting = branches.filter((b) => (Array.isArray(value) ? b.items !== undefined : b.properties !== undefined || b.patternProperties !== undefined));
    if (fitting.length === 1) return dropUnknownFields(fitting[0], value, at, dropped);
    if (!Array.isArray(value) && fitting.length > 1 && fitting.every((b) => b.additionalProperties === false)) {
      const obj = value as Record<string, unknown>;
      for (const key of Object.keys(obj)) {
        const declaring = fitting.map((b) => declared(b, key)).filter((x) => x !== undefined);
        if (!declaring.length) {
          delete obj[key];
          dropped.push(at + key);
        } else if (declaring.every((d) => JSON.stringify(d) === JSON.stringify(declaring[0]))) {
          dropUnknownFields(declaring[0], obj[key], `${at}${key}.`, dropped);
        }
      }
    }
    return dropped;
  }
  if (Array.isArray(value)) {
    if (isObject(s.items)) value.forEach((v, i) => dropUnknownFields(s.items, v, `${at}${i}.`, dropped));
    return dropped;
  }
  if (s.properties === undefined && s.patternProperties === undefined) {
    if (isObject(s.additionalProperties)) for (const [k, v] of Object.entries(value)) dropUnknownFields(s.additionalProperties, v, `${at}${k}.`, dropped);
    return dropped;
  }
  const obj = value as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    const sub = declared(s, key);
    if (sub !== undefined) dropUnknownFields(sub, obj[key], `${at}${key}.`, dropped);
    else if (s.additionalProperties === false) {
      delete obj[key];
      dropped.push(at + key);
    } else if (isObject(s.additionalProperties)) dropUnknownFields(s.additionalProperties, obj[key], `${at}${key}.`, dropped);
  }
  return dropped;
}

/** The schema an object schema gives a property: declared by name or by pattern; undefined if neither. */
function declared(s: JsonSchema, key: string): JsonSchema | undefined {
  if (s.properties && Object.hasOwn(s.properties, key)) return s.properties[key];
  for (const [pattern, sub] of Object.entries(s.patternProperties ?? {})) if (new RegExp(pattern, 'u').test(key)) return sub;
  return undefined;
}

/**
 * The validatorCompiler of routes with `unknownFields: 'ignored'`: the body's undeclared fields are
 * dropped, then it is validated as strictly as any other (types, lengths, required fields).
 */
export function compileLenientValidator(route: { schema: unknown; httpPart?: string }) {
  const validate = compileValidator(route);
  if (route.httpPart !== 'body') return validate;
  const wrapper = ((data: unknown) => {
    dropUnknownFields(route.schema, data);
    const out = validate(data as never);
    (wrapper as Compiled).errors = validate.errors;
    return out;
  }) as Compiled;
  return wrapper;
}

/** The schema as the OpenAPI document shows a body whose undeclared fields are ignored: no object closed. */
export function openObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(openObjects);
  if (!schema || typeof schema !== 'object') return schema;
  return Object.fromEntries(Object.entries(schema).filter(([k, v]) => !(k === 'additionalProperties' && v === false)).map(([k, v]) => [k, openObjects(v)]));
}

const PRIMITIVES = new Set(['string', 'boolean', 'number', 'integer', 'null']);
/** Keywords that say nothing about how a value is written out. */
const SILENT = new Set(['type', 'maxLength', 'minLength', 'pattern', 'minimum', 'maximum', 'description', 'title']);

/**
 * The schema with each anyOf of plain primitive types (Nullable(String), a tag's string | boolean | null)
 * as one type list. fast-json-stringify writes a type list by the value's own type, where for anyOf it
 * runs an ajv validator per branch on every value (and compiles them on the first answer).
 */
export function primitiveUnions(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(primitiveUnions);
  if (!schema || typeof schema !== 'object') return schema;
  const s = schema as Record<string, unknown>;
  const branches = s.anyOf;
  if (Array.isArray(branches) && Object.keys(s).every((k) => k === 'anyOf' || k === 'description' || k === 'title')) {
    const plain = branches.every((b) => b && typeof b === 'object' && PRIMITIVES.has((b as { type?: string }).type as string) && Object.keys(b).every((k) => SILENT.has(k)));
    if (plain) return { ...(s.description ? { description: s.description } : {}), type: [...new Set(branches.map((b) => (b as { type: string }).type))] };
  }
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, primitiveUnions(v)]));
}

/** fastify's serializer factory (schemaController.compilersFactory.buildSerializer). */
export const serializerCompilers = {
  buildSerializer: (externalSchemas: unknown, options: unknown) => {
    const compile = serializerSelector()(externalSchemas as never, options as never);
    // None are added today; were some, the same route schema could write differently beside them.
    const shared = JSON.stringify(externalSchemas ?? {});
    return (route: { schema: unknown }) => {
      const write = lazy(() => {
        const schema = primitiveUnions(route.schema);
        return cached(serializers, `${shared} ${JSON.stringify(schema)}`, () => compile({ ...route, schema } as never) as Compiled);
      });
      // The newline upstream ends every body with (app.ts's onSend adds it to bodies written elsewhere),
      // added while the text is still pieces: added after the hook's check, a large answer was copied
      // whole once more (a client's list of 200 services is 140 KB).
      return (data: unknown) => `${write(data as never)}\n`;
    };
  },
};
