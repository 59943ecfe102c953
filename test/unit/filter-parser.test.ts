import { describe, expect, it } from 'vitest';
import { FilterError } from '../../src/store/filter/ast.js';
import { parseFilter } from '../../src/store/filter/parser.js';

const f = (name: string, pos: number) => ({ kind: 'field', name, pos });
const s = (value: string) => ({ kind: 'string', value });
const n = (value: number) => ({ kind: 'number', value });

function err(text: string): FilterError {
  try {
    parseFilter(text);
  } catch (e) {
    if (e instanceof FilterError) return e;
    throw e;
  }
  throw new Error(`'${text}' parsed without error`);
}

describe('filter parser: constructs', () => {
  it('parses every comparison operator', () => {
    for (const op of ['=', '!=', '<', '<=', '>', '>=']) {
      expect(parseFilter(`cost ${op} 5`).where).toEqual({ kind: 'cmp', op, lhs: f('cost', 1), rhs: n(5), pos: 6 });
    }
    expect(parseFilter('cost>=5').where).toMatchObject({ op: '>=', rhs: n(5) });
  });

  it('parses literals: strings with escapes, numbers, booleans, null, datetimes', () => {
    expect(parseFilter(String.raw`name = "a\"b\\c\n\t\u0041"`).where).toMatchObject({ rhs: s('a"b\\c\n\tA') });
    expect(parseFilter('x = -1.5e2').where).toMatchObject({ rhs: n(-150) });
    expect(parseFilter('x = .5').where).toMatchObject({ rhs: n(0.5) });
    expect(parseFilter('x = true').where).toMatchObject({ rhs: { kind: 'bool', value: true } });
    expect(parseFilter('x = FALSE').where).toMatchObject({ rhs: { kind: 'bool', value: false } });
    expect(parseFilter('x = null').where).toMatchObject({ rhs: { kind: 'null' } });
    expect(parseFilter('x > datetime(2024-01-02T03:04:05Z)').where).toMatchObject({ rhs: { kind: 'datetime', value: '2024-01-02T03:04:05.000Z' } });
    expect(parseFilter('x > datetime("2024-01-02T03:04:05+02:00")').where).toMatchObject({ rhs: { kind: 'datetime', value: '2024-01-02T01:04:05.000Z' } });
  });

  it('parses contains, icontains and their negations', () => {
    expect(parseFilter('name contains "web"').where).toEqual({ kind: 'contains', lhs: f('name', 1), rhs: s('web'), ci: false, negated: false, pos: 6 });
    expect(parseFilter('name icontains "web"').where).toMatchObject({ ci: true, negated: false });
    expect(parseFilter('name not contains "web"').where).toMatchObject({ ci: false, negated: true });
    expect(parseFilter('name NOT ICONTAINS "web"').where).toMatchObject({ ci: true, negated: true });
  });

  it('parses in, not in, between and not between', () => {
    expect(parseFilter('name in ["a", "b"]').where).toEqual({ kind: 'in', lhs: f('name', 1), values: [s('a'), s('b')], negated: false, pos: 6 });
    expect(parseFilter('cost not in [1,2,3]').where).toMatchObject({ kind: 'in', negated: true, values: [n(1), n(2), n(3)] });
    expect(parseFilter('cost between 1 and 5').where).toEqual({ kind: 'between', lhs: f('cost', 1), low: n(1), high: n(5), negated: false, pos: 6 });
    expect(parseFilter('cost not between 1 and 5').where).toMatchObject({ kind: 'between', negated: true });
    expect(parseFilter('createdAt between datetime(2024-01-01T00:00:00Z) and datetime(2025-01-01T00:00:00Z)').where).toMatchObject({ kind: 'between', low: { kind: 'datetime' } });
  });

  it('parses set functions, isEmpty, bare boolean fields and constants', () => {
    expect(parseFilter('anyOf(roleAttributes) = "web"').where).toMatchObject({ kind: 'cmp', lhs: { kind: 'set', fn: 'anyOf', name: 'roleAttributes' } });
    expect(parseFilter('allOf(roleAttributes) contains "w"').where).toMatchObject({ kind: 'contains', lhs: { kind: 'set', fn: 'allOf' } });
    expect(parseFilter('count(roleAttributes) > 2').where).toMatchObject({ lhs: { kind: 'set', fn: 'count' }, rhs: n(2) });
    expect(parseFilter('ANYOF(roleAttributes) in ["a"]').where).toMatchObject({ kind: 'in', lhs: { fn: 'anyOf' } });
    expect(parseFilter('isEmpty(roleAttributes)').where).toEqual({ kind: 'isEmpty', name: 'roleAttributes', pos: 1 });
    expect(parseFilter('disabled').where).toEqual({ kind: 'boolField', name: 'disabled', pos: 1 });
    expect(parseFilter('true').where).toEqual({ kind: 'const', value: true });
    expect(parseFilter('false').where).toEqual({ kind: 'const', value: false });
  });

  it('gives not > and > or precedence, and honours parentheses', () => {
    const q = parseFilter('a = 1 or b = 2 and not c = 3');
    expect(q.where).toMatchObject({ kind: 'or', left: { kind: 'cmp' }, right: { kind: 'and', left: { kind: 'cmp' }, right: { kind: 'not' } } });
    expect(parseFilter('(a = 1 or b = 2) and c = 3').where).toMatchObject({ kind: 'and', left: { kind: 'or' } });
    expect(parseFilter('not not disabled').where).toMatchObject({ kind: 'not', expr: { kind: 'not', expr: { kind: 'boolField' } } });
  });

  it('parses dotted and quoted field names', () => {
    expect(parseFilter('tags.env = "prod"').where).toMatchObject({ lhs: f('tags.env', 1) });
    expect(parseFilter(`'limit' = "x"`).where).toMatchObject({ lhs: { kind: 'field', name: 'limit' } });
  });

  it('parses sort, skip and limit, alone or after a condition, keywords in any case', () => {
    expect(parseFilter('name contains "web" sort by name desc, createdAt skip 10 limit 5')).toEqual({
      where: expect.objectContaining({ kind: 'contains' }),
      sort: [{ name: 'name', desc: true, pos: 29 }, { name: 'createdAt', desc: false, pos: 40 }],
      skip: 10,
      limit: 5,
    });
    expect(parseFilter('SORT BY name ASC')).toEqual({ sort: [{ name: 'name', desc: false, pos: 9 }] });
    expect(parseFilter('limit none')).toEqual({ sort: [], limit: 'none' });
    expect(parseFilter('skip 3')).toEqual({ sort: [], skip: 3 });
    expect(parseFilter('limit 2 skip 1')).toEqual({ sort: [], limit: 2, skip: 1 });
    expect(parseFilter('  ')).toEqual({ sort: [] });
  });
});

describe('filter parser: errors name the position and what was expected', () => {
  const cases: [string, number, RegExp][] = [
    ['name contans "x"', 6, /expected an operator .* after name, found 'contans'/],
    ['name = ', 8, /expected a value.*found the end of the filter/],
    ['name = "abc', 8, /never closed/],
    [String.raw`name = "a\qb"`, 10, /unknown escape '\\q'/],
    ['name in []', 10, /in-list may not be empty/],
    ['name in ["a", 1]', 15, /one kind/],
    ['name in ["a" "b"]', 14, /expected ',' or '\]'/],
    ['name in "a"', 9, /expected '\[' to start the list/],
    ['name in [null]', 10, /strings, numbers or datetimes/],
    ['(name = "a"', 12, /expected '\)' or 'and' \/ 'or'/],
    ['name = "a")', 11, /expected 'and', 'or', 'sort by', 'skip', 'limit' or the end/],
    ['and name = "a"', 1, /expected a field name/],
    ['name = "a" and', 15, /expected a field name.*found the end/],
    ['cost between 1 5', 16, /expected 'and'/],
    ['name not = "a"', 10, /contains, icontains, in or between after 'not'/],
    ['anyOf(roleAttributes)', 22, /expected an operator .* after anyOf\(roleAttributes\)/],
    ['anyOf roleAttributes', 7, /expected '\(' after anyOf/],
    ['isEmpty(and)', 9, /expected a field name/],
    ['x > datetime(yesterday)', 5, /not an RFC 3339 date-time/],
    ['x > datetime(2024-13-45T00:00:00Z)', 5, /not an RFC 3339/],
    ['x > datetime 2024', 14, /expected '\(' after datetime/],
    ['sort name', 6, /expected 'by'/],
    ['sort by', 8, /field name to sort by/],
    ['limit', 6, /whole number after limit \(or 'none'\)/],
    ['limit -1', 7, /whole number after limit/],
    ['skip 1.5', 6, /whole number after skip/],
    ['limit 1 limit 2', 9, /may appear only once/],
    ['skip 99999999999999999999', 6, /too large/],
    ['name = "x" # y', 12, /unexpected character '#'/],
    ['name ! "x"', 6, /'!='/],
    ['12abc = 1', 1, /is not a number/],
    ['-.', 1, /'-\.' is not a number/],
    ['x = -.e', 5, /is not a number/],
    ["'x = 1", 1, /quoted field name is never closed/],
    ['x = 1e999', 5, /out of range/],
    ['constructor(x) = 1', 12, /expected an operator .* after constructor, found '\('/],
    // Found by the filter fuzzer on PostgreSQL: `==` reached the SQL (SQLite's equality, PostgreSQL's 500).
    ['tags.env == "prod"', 10, /'==' is not an operator/],
  ];
  for (const [text, pos, message] of cases) {
    it(`${text}`, () => {
      const e = err(text);
      expect(e.message).toMatch(message);
      expect(e.pos).toBe(pos);
    });
  }

  it('refuses deep nesting instead of overflowing the stack', () => {
    expect(err('('.repeat(100) + 'a = 1' + ')'.repeat(100)).message).toMatch(/nests deeper than 64/);
    expect(err('not '.repeat(100) + 'disabled').message).toMatch(/nests deeper/);
  });
});
