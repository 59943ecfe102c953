// The response serializers write a union of plain types by the value's own type (no validator per
// value), keep every other union as it is, and end the text with upstream's newline.
import { Type } from 'typebox';
import { describe, expect, it } from 'vitest';
import { primitiveUnions, serializerCompilers } from '../../src/server/schema-compilers.js';
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
