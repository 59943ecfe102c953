// Bad input changes nothing and never fails the server: for every operation of both served OpenAPI
// documents that takes a body, a query or a header, fast-check generates values the schema forbids
// (wrong types, missing or extra fields, overlong or empty strings, NUL and control characters, huge
// numbers, deep nesting, broken JSON, wrong content types). Each answer must be a 4xx with the error
// envelope, and the row count of every table must be what it was before.
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController({ config: { authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 } });
  admin = await c.login();
});
afterAll(() => c.close());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Schema = Record<string, any>;
interface Op {
  method: string;
  path: string;
  body?: Schema;
  query: { name: string; schema: Schema }[];
  headers: { name: string; schema: Schema }[];
}

async function operations(): Promise<Op[]> {
  const ops: Op[] = [];
  for (const id of ['edge-client', 'edge-management']) {
    const doc = (await c.call('GET', `/docs/openapi/${id}.json`)).body;
    for (const [path, item] of Object.entries<Record<string, Schema>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const params = (op.parameters ?? []) as { in: string; name: string; schema: Schema }[];
        ops.push({
          method: method.toUpperCase(),
          path: path.replace(/\{\w+\}/g, 'fuzz-id'),
          body: op.requestBody?.content?.['application/json']?.schema,
          query: params.filter((p) => p.in === 'query'),
          headers: params.filter((p) => p.in === 'header'),
        });
      }
    }
  }
  return ops;
}

const typeOf = (s: Schema): string | undefined => (typeof s?.type === 'string' ? s.type : undefined);
/** JSON values of every type but the given one. */
const notOfType = (t: string) =>
  fc.oneof(
    ...(t !== 'string' ? [fc.string({ maxLength: 5 })] : []),
    ...(t !== 'integer' && t !== 'number' ? [fc.integer()] : []),
    ...(t !== 'boolean' ? [fc.boolean()] : []),
    ...(t !== 'array' ? [fc.constant([1, 'x'])] : []),
    ...(t !== 'object' ? [fc.constant({ nested: true })] : []),
  );

interface Case {
  what: string;
  payload?: string;
  contentType?: string;
  query?: string;
  headers?: Record<string, string>;
}

/** Generators of invalid requests for one operation: only mutations its schemas forbid. */
function cases(op: Op): fc.Arbitrary<Case>[] {
  const out: fc.Arbitrary<Case>[] = [];
  const json = (what: string, v: unknown) => ({ what, payload: JSON.stringify(v), contentType: 'application/json' });
  const b = op.body;
  if (b) {
    const t = typeOf(b);
    if (t) out.push(notOfType(t).map((v) => json(`body of the wrong type: ${JSON.stringify(v)}`, v)));
    out.push(fc.constant({ what: 'broken JSON', payload: '{"a": [1, 2', contentType: 'application/json' }));
    out.push(fc.constant({ what: 'wrong content type', payload: '<a/>', contentType: 'application/xml' }));
    out.push(fc.constant({ what: 'deep nesting', payload: `${'['.repeat(20000)}${']'.repeat(20000)}`, contentType: 'application/json' }));
    if (t === 'object') {
      if (b.required?.length) out.push(fc.constant(json('missing required fields', {})));
      if (b.additionalProperties === false) out.push(fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !(k in (b.properties ?? {})) && k !== '__proto__').map((k) => json(`extra field ${k}`, { [k]: 1 })));
      for (const [name, p] of Object.entries<Schema>(b.properties ?? {})) {
        const pt = typeOf(p);
        if (pt) out.push(notOfType(pt).map((v) => json(`${name} of the wrong type`, { [name]: v })));
        if (pt === 'string' && p.maxLength) out.push(fc.constant(json(`${name} too long`, { [name]: 'x'.repeat(p.maxLength + 1) })));
        if (pt === 'string' && p.minLength) out.push(fc.constant(json(`${name} empty`, { [name]: '' })));
        if (pt === 'string') out.push(fc.string({ maxLength: 6 }).map((s) => json(`${name} with NUL and control characters`, { [name]: `a\u0000${s}\u0007\u001b` })));
        if (pt === 'integer') out.push(fc.constant({ what: `${name} beyond any number`, payload: `{"${name}": 1e400}`, contentType: 'application/json' }));
      }
    }
    if (t === 'array') out.push(fc.constant(json('array of the wrong items', [1, true, null])));
  }
  for (const q of op.query) {
    const t = typeOf(q.schema);
    if (t === 'integer') out.push(fc.constantFrom('abc', '1.5', '-1e400', '').map((v) => ({ what: `${q.name}=${v}`, query: `${q.name}=${encodeURIComponent(v)}` })));
    if (t === 'string' && q.schema.maxLength) out.push(fc.constant({ what: `${q.name} too long`, query: `${q.name}=${'x'.repeat(q.schema.maxLength + 1)}` }));
    if (q.schema.anyOf?.every((a: Schema) => a.enum)) out.push(fc.constant({ what: `${q.name} not one of its values`, query: `${q.name}=NotAValue` }));
    if (q.name === 'filter') out.push(fc.constantFrom('name = ', '((', 'nosuchfield = 1', 'name contains 5 sort by').map((f) => ({ what: `filter ${f}`, query: `filter=${encodeURIComponent(f)}` })));
  }
  for (const h of op.headers) {
    if (typeOf(h.schema) === 'string' && h.schema.maxLength) out.push(fc.constant({ what: `${h.name} too long`, headers: { [h.name]: 'x'.repeat(h.schema.maxLength + 1) } }));
  }
  return out;
}

async function tableCounts(): Promise<Record<string, number>> {
  const db = c.opened.ctx.store.db;
  // The audit records refused attempts (a failed login or enrollment) by design: not a change of the model.
  const tables = (await db.introspection.getTables()).map((t) => t.name).filter((n) => !n.startsWith('kysely_') && n !== 'audit_events');
  const out: Record<string, number> = {};
  for (const t of tables) out[t] = Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(t)}`.execute(db)).rows[0].n);
  return out;
}

describe('bad input on every operation', () => {
  it('is refused with a 4xx and the error envelope, and changes no table', async () => {
    const ops = await operations();
    expect(ops.length).toBeGreaterThanOrEqual(240);
    let sent = 0;
    let covered = 0;
    for (const op of ops) {
      const gens = cases(op);
      if (!gens.length) continue;
      covered++;
      const before = await tableCounts();
      await fc.assert(
        fc.asyncProperty(fc.oneof(...gens), async (k) => {
          const url = `${op.path}${k.query ? `?${k.query}` : ''}`;
          const res = await c.app.inject({
            method: op.method as 'GET',
            url,
            headers: { 'zt-session': admin, ...(k.contentType ? { 'content-type': k.contentType } : {}), ...(k.headers ?? {}) },
            ...(k.payload !== undefined ? { payload: k.payload } : {}),
          });
          sent++;
          const label = `${op.method} ${op.path} with ${k.what} -> ${res.statusCode} ${res.body.slice(0, 160)}`;
          expect(res.statusCode, label).toBeGreaterThanOrEqual(400);
          expect(res.statusCode, label).toBeLessThan(500);
          const body = JSON.parse(res.body);
          expect(typeof body.error?.code, label).toBe('string');
          expect(typeof body.error?.message, label).toBe('string');
          expect(body.meta?.apiVersion, label).toBeTruthy();
        }),
        { numRuns: Math.min(30, gens.length * 3), seed: 20261122 },
      );
      expect(await tableCounts(), `${op.method} ${op.path} changed a table`).toEqual(before);
    }
    expect(covered).toBeGreaterThan(120);
    expect(sent).toBeGreaterThan(1000);
  }, 300_000);
});

// The other side of the schema: its largest values are valid and must be accepted, not only its
// out-of-range ones refused. The limits are read from the served OpenAPI document.
describe('the limits of the schema are valid input', () => {
  const mgmt = (method: string, path: string, body?: unknown) => c.call(method, `/edge/management/v1${path}`, { token: admin, body });
  let doc: Schema;
  const createSchema = (path: string): Schema => {
    const s = doc.paths[`/edge/management/v1${path}`].post.requestBody.content['application/json'].schema;
    return s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s;
  };
  /** n distinct strings of exactly `len` characters, each starting with `prefix`. */
  const longest = (prefix: string, n: number, len: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}-`.padEnd(len, 'x'));

  beforeAll(async () => {
    doc = (await c.call('GET', '/docs/openapi/edge-management.json')).body;
  });

  it('accepts entities with the most role attributes and the longest names, and policies with the most roles, on both semantics', async () => {
    const attrSchema = createSchema('/identities').properties.roleAttributes;
    const nameMax = createSchema('/identities').properties.name.maxLength as number;
    const roles = createSchema('/service-policies').properties.identityRoles;
    expect(attrSchema.maxItems).toBe(1000);
    expect(roles.maxItems).toBe(1000);
    const attrs = longest('a', attrSchema.maxItems, attrSchema.items.maxLength);
    const made: Record<string, string> = {};
    for (const [path, extra] of [['/identities', { type: 'User', isAdmin: false }], ['/services', { encryptionRequired: true }], ['/edge-routers', {}]] as const) {
      const r = await mgmt('POST', path, { name: `${path.slice(1)}-`.padEnd(nameMax, 'n'), roleAttributes: attrs, ...extra });
      expect(r.status, `${path}: ${r.text.slice(0, 300)}`).toBe(201);
      made[path] = r.body.data.id;
    }
    const allOf = attrs.map((a) => `#${a}`);
    // AnyOf: the most roles of the longest length, one of which matches.
    const anyOf = [...longest('#none', roles.maxItems - 1, roles.items.maxLength), `#${attrs[500]}`];
    for (const semantic of ['AllOf', 'AnyOf']) {
      const rolesOf = semantic === 'AllOf' ? allOf : anyOf;
      const policies = [
        ['/service-policies', { type: 'Dial', identityRoles: rolesOf, serviceRoles: rolesOf, postureCheckRoles: rolesOf }, ['identities', 'services']],
        ['/edge-router-policies', { identityRoles: rolesOf, edgeRouterRoles: rolesOf }, ['identities', 'edge-routers']],
        ['/service-edge-router-policies', { serviceRoles: rolesOf, edgeRouterRoles: rolesOf }, ['services', 'edge-routers']],
      ] as const;
      for (const [path, body, sides] of policies) {
        const r = await mgmt('POST', path, { name: `${semantic}${path}`.padEnd(nameMax, 'p'), semantic, ...body });
        expect(r.status, `${semantic} ${path}: ${r.text.slice(0, 300)}`).toBe(201);
        const id = r.body.data.id;
        for (const side of sides) {
          const members = await mgmt('GET', `${path}/${id}/${side}`);
          expect(members.status, members.text.slice(0, 300)).toBe(200);
          expect(members.body.data.map((m: { id: string }) => m.id), `${semantic} ${path} ${side}`).toEqual([made[`/${side}`]]);
        }
        // Changing all the roles at once, and evaluating an entity against the policy, work as well.
        expect((await mgmt('PATCH', path + `/${id}`, { ...body })).status).toBe(200);
      }
    }
    const patched = await mgmt('PATCH', `/identities/${made['/identities']}`, { roleAttributes: [...attrs].reverse() });
    expect(patched.status, patched.text.slice(0, 300)).toBe(200);
    const check = await mgmt('GET', `/identities/${made['/identities']}/service-policies`);
    expect(check.body.data.length).toBe(2);
  }, 120_000);
});
