// The CLI's local reads without the HTTP app. `ztc identity list -d DIR` used to pay, before its one query,
// for loading fastify and registering the management API's routes, compiling the route's query validator
// and response serializer, loading the PKI (node-forge) and the first-start checks: 0.9 s on a quiet 2-core
// machine, 2.5 s on a busy one. A GET of a declared resource's list or one of its rows (what list, get and
// the name lookups of every command ask) is answered here from the store, by the same model functions the
// route calls (listResource, getResource) and in the route's envelope; anything else, or anything this
// path is not sure of (PostgreSQL, a database older than this program, a query parameter it does not take,
// an error other than a plain 404), is left to the app (transport.ts), which answers it as the server does.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Reply } from './https.js';

export interface Reader {
  /** The answer to a GET, or undefined when the app must answer it. */
  get(url: string): Promise<Reply | undefined>;
  close(): Promise<void>;
}

const MANAGEMENT = '/edge/management/v1/';
/** The query parameters a list takes here; any other sends the request to the app. */
const LIST_PARAMS = new Set(['filter', 'limit', 'offset']);

/** A reader on the data dir's SQLite file as it is, or undefined when the full open is needed. */
export async function openReader(config: Config): Promise<Reader | undefined> {
  if (config.db || process.env.ZTC_LOCAL_APP === '1') return undefined;
  const file = path.join(config.dataDir, 'ztc.db');
  if (!fs.existsSync(file)) return undefined;
  const [{ openSqlite, upToDate }, { loadSealer }, { systemClock }, { managementResources }] = await Promise.all([
    import('../store/db.js'),
    import('../model/secrets.js'),
    import('../model/clock.js'),
    import('../server/management-resources.js'),
  ]);
  // The same refusal of a damaged file as every open (quick_check), and no migration: a database this
  // program would migrate is left to the full open.
  const store = await openSqlite(file, { checkpointThread: false, migrate: false });
  if (!(await upToDate(store))) {
    await store.close();
    return undefined;
  }
  const [{ getResource, listResource }, { filterableFields }, { listOf, meta, ok }, { Envelope, ListEnvelope }] = await Promise.all([
    import('../model/crud.js'),
    import('../server/crud.js'),
    import('../server/envelope.js'),
    import('../model/schemas/common.js'),
  ]);
  const serialize = (kind: 'list' | 'get', decl: (typeof managementResources)[number], data: unknown) =>
    `${JSON.stringify(asSchemaWrites((kind === 'list' ? ListEnvelope : Envelope)(decl.schemas.detail), data))}\n`;
  // What reads use of the context; the PKI and the events hub are the full open's (a read that reached for
  // them fails here and is answered by the app).
  const ctx = { store, config, clock: systemClock, sealer: loadSealer(path.join(config.dataDir, 'pki')) } as unknown as Parameters<typeof listResource>[0];
  const byPlural = new Map(managementResources.map((d) => [d.plural, d]));
  const reply = (status: number, text: string): Reply => ({ status, headers: { 'content-type': 'application/json; charset=utf-8' }, text, json: JSON.parse(text) as Reply['json'] });
  return {
    async get(url) {
      if (!url.startsWith(MANAGEMENT)) return undefined;
      const [p, q = ''] = url.slice(MANAGEMENT.length).split('?', 2);
      const [plural, rawId, ...more] = p.split('/');
      const decl = byPlural.get(plural);
      if (!decl || more.length) return undefined;
      const query = new URLSearchParams(q);
      try {
        if (rawId === undefined) {
          if (!decl.ops.includes('list')) return undefined;
          const params: { filter?: string; limit?: number; offset?: number } = {};
          for (const [k, v] of query) {
            if (!LIST_PARAMS.has(k) || query.getAll(k).length > 1) return undefined;
            if (k === 'filter') {
              if (v.length > 4096) return undefined;
              params.filter = v;
            } else {
              if (!/^\d{1,9}$/.test(v)) return undefined;
              params[k as 'limit' | 'offset'] = Number(v);
            }
          }
          const { items, pagination } = await listResource(ctx, decl, params);
          const rows: unknown[] = [];
          if (Array.isArray(items)) rows.push(...items);
          else for await (const chunk of items) rows.push(...chunk);
          return reply(200, serialize('list', decl, listOf(rows, pagination, filterableFields(decl))));
        }
        if (!decl.ops.includes('get') || q) return undefined;
        const id = decodeURIComponent(rawId);
        return reply(200, serialize('get', decl, ok(await getResource(ctx, decl, id))));
      } catch (err) {
        // Not found (a name tried where an id goes, before the lookup by name): the app's answer, as it gives it.
        const e = err as { status?: number; code?: string; message?: string; fieldCause?: unknown; extra?: unknown };
        if (rawId !== undefined && e.status === 404 && e.code && !e.fieldCause && !e.extra) {
          // As the app writes an error (plugins/errors.ts sendError), one line ending with a newline.
          return reply(404, `${JSON.stringify({ error: { code: e.code, message: e.message, requestId: randomUUID(), args: { urlVars: { id: decodeURIComponent(rawId) } } }, meta: meta() })}\n`);
        }
        return undefined;
      }
    },
    close: () => store.close(),
  };
}

type Schema = { properties?: Record<string, Schema>; required?: string[]; patternProperties?: Record<string, Schema>; additionalProperties?: boolean | Schema; items?: Schema; anyOf?: Schema[]; type?: string | string[] };
const isPlain = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * The value as the route's response serializer (fast-json-stringify over the same schema) writes it: an
 * object's declared properties in the schema's order (required ones first), undeclared ones left out unless the schema takes
 * others (a map: every key, in the value's order). test/cli/local-read.test.ts holds the two equal, byte
 * for byte, for every resource this path answers; compiling the serializer itself cost a local read a
 * third of its time.
 */
export function asSchemaWrites(schema: Schema | undefined, value: unknown): unknown {
  if (!schema || value === null || typeof value !== 'object') return value;
  if (schema.anyOf) {
    const branch = schema.anyOf.find((b) => (Array.isArray(value) ? b.items !== undefined || b.type === 'array' : b.properties !== undefined || b.patternProperties !== undefined || b.additionalProperties !== undefined || b.type === 'object'));
    return asSchemaWrites(branch, value);
  }
  if (Array.isArray(value)) return value.map((v) => asSchemaWrites(schema.items, v));
  if (!isPlain(value)) return value;
  const out: Record<string, unknown> = {};
  const declared = schema.properties ?? {};
  // Required properties first, then the others, each in the schema's order (as fast-json-stringify orders them).
  const required = new Set(schema.required ?? []);
  const keys = Object.keys(declared).sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
  for (const k of keys) if (value[k] !== undefined) out[k] = asSchemaWrites(declared[k], value[k]);
  const others = schema.patternProperties ? Object.values(schema.patternProperties)[0] : schema.additionalProperties;
  if (others) for (const [k, v] of Object.entries(value)) if (!(k in declared) && v !== undefined) out[k] = asSchemaWrites(others === true ? undefined : others, v);
  return out;
}
