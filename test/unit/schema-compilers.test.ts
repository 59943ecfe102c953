// The response serializers write a union of plain types by the value's own type (no validator per
// value), keep every other union as it is, and end the text with upstream's newline.
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { compileLenientValidator, dropUnknownFields, openObjects, primitiveUnions, serializerCompilers } from '../../src/server/schema-compilers.js';
import { Nullable, TagValue } from '../../src/model/schemas/common.js';

describe('response serializers', () => {
  it('turn a union of plain types into a type list, and leave other unions alone', () => {
    expect(primitiveUnions(TagValue)).toEqual({ type: ['string', 'boolean', 'null'] });
    expect(primitiveUnions(Nullable(Type.String({ maxLength: 9 })))).toEqual({ type: ['string', 'null'] });
    const objectOrNull = Nullable(Type.Object({ a: Type.String() }));
    expect(primitiveUnions(objectOrNull)).toEqual(JSON.parse(JSON.stringify(objectOrNull)));
    const dated = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
    expect(primitiveUnions(dated)).toEqual(JSON.parse(JSON.stringify(dated)));
  });

  it('write tags and nullable fields as the schema says, from any copy of the schema, ending with a newline as upstream', () => {
    const schema = Type.Object({ tags: Type.Record(Type.String(), TagValue), externalId: Nullable(Type.String()), n: Type.Integer() });
    const build = serializerCompilers.buildSerializer({}, {});
    const one = build({ schema });
    const two = build({ schema: JSON.parse(JSON.stringify(schema)) });
    const value = { tags: { s: 'x', b: true, z: null }, externalId: null, n: 3, secret: 'not in the schema' };
    expect(JSON.parse((one as (v: unknown) => string)(value))).toEqual({ tags: { s: 'x', b: true, z: null }, externalId: null, n: 3 });
    expect((two as (v: unknown) => string)({ ...value, externalId: 'e-1' })).toBe('{"tags":{"s":"x","b":true,"z":null},"externalId":"e-1","n":3}\n');
  });
});

// Bodies of upstream's operations: undeclared fields are dropped before validation (issue 42c).
describe('dropping undeclared fields', () => {
  const Inner = Type.Object({ a: Type.String() }, { additionalProperties: false });
  const Body = Type.Object(
    {
      name: Type.String(),
      inner: Type.Optional(Nullable(Inner)),
      list: Type.Optional(Type.Array(Inner)),
      map: Type.Optional(Type.Unsafe({ type: 'object', additionalProperties: Inner })),
      open: Type.Optional(Type.Object({ x: Type.String() })),
      either: Type.Optional(Type.Union([Type.Object({ kind: Type.Literal('p'), p: Type.String() }, { additionalProperties: false }), Type.Object({ kind: Type.Literal('q'), q: Type.String() }, { additionalProperties: false })])),
    },
    { additionalProperties: false },
  );

  it('drops them at every depth of closed objects, and leaves open objects alone', () => {
    const v = { name: 'n', extra: 1, inner: { a: 'x', b: 2 }, list: [{ a: 'y', c: 3 }], map: { k: { a: 'z', d: 4 } }, open: { x: 'o', y: 'kept' } };
    expect(dropUnknownFields(Body, v)).toEqual(['extra', 'inner.b', 'list.0.c', 'map.k.d']);
    expect(v).toEqual({ name: 'n', inner: { a: 'x' }, list: [{ a: 'y' }], map: { k: { a: 'z' } }, open: { x: 'o', y: 'kept' } });
    const nulls = { name: 'n', inner: null };
    expect(dropUnknownFields(Body, nulls)).toEqual([]);
  });

  it('keeps in a union what any branch declares, so validation still picks the branch', () => {
    const v = { name: 'n', either: { kind: 'q', q: 'yes', p: 'other branch', z: 0 } };
    expect(dropUnknownFields(Body, v)).toEqual(['either.z']);
    expect(v.either).toEqual({ kind: 'q', q: 'yes', p: 'other branch' });
  });

  it('validates what is left as strictly as before, and shows the body open', () => {
    const validate = compileLenientValidator({ schema: Body, httpPart: 'body' }) as unknown as ((v: unknown) => boolean) & { errors?: unknown };
    expect(validate({ name: 'n', colour: 'red' })).toBe(true);
    expect(validate({ colour: 'red' })).toBe(false);
    expect(validate.errors).toBeTruthy();
    expect(validate({ name: 5 })).toBe(false);
    expect(JSON.stringify(openObjects(Body))).not.toContain('"additionalProperties":false');
    expect((openObjects(Body) as { properties: { map: unknown } }).properties.map).toEqual({ type: 'object', additionalProperties: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] } });
  });
});
