// Property: for random identities and random filters, the SQL the compiler produces selects exactly
// what the reference evaluator (written from the grammar) selects, in the same order when sorted.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Expr, Literal, Operand } from '../../src/store/filter/ast.js';
import { indexRoleAttributes, indexTags } from '../../src/store/entity-index.js';
import { parseFilter } from '../../src/store/filter/parser.js';
import { MGMT, startTestController, type TestController } from '../helpers/controller.js';
import { evaluate, printExpr } from '../helpers/zitiql-reference.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const WORDS = ['a', 'b', 'c', 'web', 'Web', 'db'];
const TAG_VALUES = ['prod', 'dev', 'Prod', true, false, null] as const;
const DATES = ['2021-03-01T00:00:00.000Z', '2023-06-15T12:30:00.000Z', '2025-01-01T00:00:00.000Z', '2027-09-09T09:09:09.000Z'];

const rowArb = fc.record({
  name: fc.stringMatching(/^[a-zA-Z0-9-]{1,8}$/),
  typeId: fc.constantFrom('Default', 'Router'),
  isAdmin: fc.boolean(),
  disabled: fc.boolean(),
  defaultHostingCost: fc.integer({ min: 0, max: 20 }),
  externalId: fc.option(fc.constantFrom('ext-1', 'ext-2', 'EXT-3'), { nil: null }),
  roleAttributes: fc.uniqueArray(fc.constantFrom(...WORDS), { maxLength: 4 }),
  tags: fc.dictionary(fc.constantFrom('env', 'team', 'on'), fc.constantFrom(...TAG_VALUES), { maxKeys: 3 }),
  createdAt: fc.constantFrom(...DATES, '2022-01-01T00:00:00.000Z', '2026-12-31T23:59:59.999Z'),
});

const s = (value: string): Literal => ({ kind: 'string', value });
const num = (value: number): Literal => ({ kind: 'number', value });
const dt = (value: string): Literal => ({ kind: 'datetime', value });
const field = (name: string): Operand => ({ kind: 'field', name, pos: 1 });
const cmpOp = fc.constantFrom('=', '!=', '<', '<=', '>', '>=') as fc.Arbitrary<'=' | '!=' | '<' | '<=' | '>' | '>='>;
const eqOp = fc.constantFrom('=', '!=') as fc.Arbitrary<'=' | '!='>;
const text = fc.oneof(fc.constantFrom(...WORDS, 'ext', 'EXT', '-', 'x', ''), fc.stringMatching(/^[a-zA-Z0-9-]{0,3}$/));

const leaf: fc.Arbitrary<Expr> = fc.oneof(
  fc.record({ op: cmpOp, f: fc.constantFrom('name', 'externalId', 'type', 'tags.env', 'tags.team'), v: text }).map(({ op, f, v }) => ({ kind: 'cmp', op, lhs: field(f), rhs: s(v), pos: 1 }) as Expr),
  fc.record({ op: eqOp, f: fc.constantFrom('externalId', 'tags.env', 'tags.on', 'name') }).map(({ op, f }) => ({ kind: 'cmp', op, lhs: field(f), rhs: { kind: 'null' }, pos: 1 }) as Expr),
  fc.record({ op: eqOp, f: fc.constantFrom('isAdmin', 'disabled', 'tags.on', 'tags.env'), v: fc.boolean() }).map(({ op, f, v }) => ({ kind: 'cmp', op, lhs: field(f), rhs: { kind: 'bool', value: v }, pos: 1 }) as Expr),
  fc.constantFrom('isAdmin', 'disabled').map((f) => ({ kind: 'boolField', name: f, pos: 1 }) as Expr),
  fc.record({ op: cmpOp, v: fc.integer({ min: -1, max: 21 }) }).map(({ op, v }) => ({ kind: 'cmp', op, lhs: field('defaultHostingCost'), rhs: num(v), pos: 1 }) as Expr),
  fc.record({ op: cmpOp, v: fc.constantFrom(...DATES) }).map(({ op, v }) => ({ kind: 'cmp', op, lhs: field('createdAt'), rhs: dt(v), pos: 1 }) as Expr),
  fc.record({ f: fc.constantFrom('name', 'externalId', 'tags.env'), v: text, ci: fc.boolean(), negated: fc.boolean() }).map(({ f, v, ci, negated }) => ({ kind: 'contains', lhs: field(f), rhs: s(v), ci, negated, pos: 1 }) as Expr),
  fc.record({ vs: fc.array(text, { minLength: 1, maxLength: 3 }), negated: fc.boolean(), f: fc.constantFrom('name', 'type', 'tags.env') }).map(({ vs, negated, f }) => ({ kind: 'in', lhs: field(f), values: vs.map(s), negated, pos: 1 }) as Expr),
  fc.record({ vs: fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 3 }), negated: fc.boolean() }).map(({ vs, negated }) => ({ kind: 'in', lhs: field('defaultHostingCost'), values: vs.map(num), negated, pos: 1 }) as Expr),
  fc.record({ a: fc.integer({ min: 0, max: 20 }), b: fc.integer({ min: 0, max: 20 }), negated: fc.boolean() }).map(({ a, b, negated }) => ({ kind: 'between', lhs: field('defaultHostingCost'), low: num(a), high: num(b), negated, pos: 1 }) as Expr),
  fc.record({ a: fc.constantFrom(...DATES), b: fc.constantFrom(...DATES), negated: fc.boolean() }).map(({ a, b, negated }) => ({ kind: 'between', lhs: field('createdAt'), low: dt(a), high: dt(b), negated, pos: 1 }) as Expr),
  fc.record({ fn: fc.constantFrom('anyOf', 'allOf') as fc.Arbitrary<'anyOf' | 'allOf'>, op: cmpOp, v: text }).map(({ fn, op, v }) => ({ kind: 'cmp', op, lhs: { kind: 'set', fn, name: 'roleAttributes', pos: 1 }, rhs: s(v), pos: 1 }) as Expr),
  fc.record({ fn: fc.constantFrom('anyOf', 'allOf') as fc.Arbitrary<'anyOf' | 'allOf'>, vs: fc.array(text, { minLength: 1, maxLength: 3 }), negated: fc.boolean() }).map(({ fn, vs, negated }) => ({ kind: 'in', lhs: { kind: 'set', fn, name: 'roleAttributes', pos: 1 }, values: vs.map(s), negated, pos: 1 }) as Expr),
  fc.record({ fn: fc.constantFrom('anyOf', 'allOf') as fc.Arbitrary<'anyOf' | 'allOf'>, v: text, ci: fc.boolean() }).map(({ fn, v, ci }) => ({ kind: 'contains', lhs: { kind: 'set', fn, name: 'roleAttributes', pos: 1 }, rhs: s(v), ci, negated: false, pos: 1 }) as Expr),
  fc.record({ op: cmpOp, v: fc.integer({ min: 0, max: 5 }) }).map(({ op, v }) => ({ kind: 'cmp', op, lhs: { kind: 'set', fn: 'count', name: 'roleAttributes', pos: 1 }, rhs: num(v), pos: 1 }) as Expr),
  fc.constant({ kind: 'isEmpty', name: 'roleAttributes', pos: 1 } as Expr),
  fc.boolean().map((value) => ({ kind: 'const', value }) as Expr),
);

const exprArb: fc.Arbitrary<Expr> = fc.letrec<{ e: Expr }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record({ kind: fc.constantFrom('and', 'or') as fc.Arbitrary<'and' | 'or'>, left: tie('e'), right: tie('e') }) as fc.Arbitrary<Expr>,
    tie('e').map((expr) => ({ kind: 'not', expr }) as Expr),
  ),
})).e;

async function load(rows: fc.infer<typeof rowArb>[]) {
  const db = c.opened.ctx.store.db;
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('identities').where('isDefaultAdmin', '=', 0).execute();
    await tx.deleteFrom('entityTags').execute();
    await tx.deleteFrom('entityRoleAttributes').execute();
    let i = 0;
    for (const r of rows) {
      i++;
      await tx
        .insertInto('identities')
        .values({
          id: `id${String(i).padStart(3, '0')}`, name: `${r.name}-${i}`, typeId: r.typeId, authPolicyId: 'default', isAdmin: r.isAdmin ? 1 : 0, isDefaultAdmin: 0,
          disabled: r.disabled ? 1 : 0, defaultHostingCost: r.defaultHostingCost, externalId: r.externalId ? `${r.externalId}-${i}` : null,
          roleAttributes: JSON.stringify(r.roleAttributes), tags: JSON.stringify(r.tags), createdAt: r.createdAt, updatedAt: r.createdAt,
        } as never)
        .execute();
      await indexTags(tx, `id${String(i).padStart(3, '0')}`, r.tags);
      await indexRoleAttributes(tx, `id${String(i).padStart(3, '0')}`, r.roleAttributes);
    }
  });
}

describe('filter language: SQL agrees with the reference evaluator', () => {
  it('selects the same identities for random data and random filters', async () => {
    let nonTrivial = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { minLength: 0, maxLength: 15 }), exprArb, fc.constantFrom('', ' sort by name asc', ' sort by name desc'), async (rows, expr, sort) => {
        await load(rows);
        const all = (await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('true limit none')}`, { token: admin })).body.data as Record<string, unknown>[];
        expect(all).toHaveLength(rows.length + 1);
        const text = printExpr(expr);
        // The printed text parses back to the same meaning.
        expect(parseFilter(text).where).toBeDefined();
        const res = await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent(text + sort + ' limit none')}`, { token: admin });
        expect(res.status, `${text}: ${res.text}`).toBe(200);
        const got = (res.body.data as { id: string }[]).map((r) => r.id);
        let want = all.filter((r) => evaluate(expr, r));
        if (sort) {
          want = [...want].sort((a, b) => (String(a.name) < String(b.name) ? -1 : String(a.name) > String(b.name) ? 1 : 0));
          if (sort.includes('desc')) want.reverse();
          expect(got, text + sort).toEqual(want.map((r) => r.id));
        } else {
          expect([...got].sort(), text).toEqual(want.map((r) => String(r.id)).sort());
        }
        expect(res.body.meta.pagination.totalCount).toBe(want.length);
        if (want.length > 0 && want.length < all.length) nonTrivial++;
      }),
      { numRuns: Number(process.env.FILTER_PROPERTY_RUNS ?? 300) },
    );
    // The generator must produce filters that actually discriminate, or the property says little.
    expect(nonTrivial).toBeGreaterThan(60);
  }, 120_000);
});
