// Query AST -> SQL through Kysely, checked against a resource's declared fields. Nothing is evaluated
// in memory. Comparisons are two-valued: a comparison with a missing (NULL) value is false, so
// `not` means what it says. Tags are typed: a string literal matches string values only, true/false
// boolean values only, null a missing key or JSON null.
import { sql, type RawBuilder, type SqlBool } from 'kysely';
import { fieldRef, type FieldSpec } from '../../model/resource.js';
import type { DialectHelpers } from '../dialect.js';
import { FilterError, type Expr, type Literal, type Operand, type Query } from './ast.js';

export const MAX_CONDITIONS = 200;

type Sql = RawBuilder<SqlBool>;
type Resolved = { spec: FieldSpec; ref: RawBuilder<unknown>; type: FieldSpec['type'] | 'tag'; tagKey?: string; name: string };

const NOT_NULL = (ref: RawBuilder<unknown>, cond: Sql): Sql => sql<SqlBool>`(${ref} is not null and ${cond})`;
const likePattern = (s: string) => '%' + s.replace(/[\\%_]/g, (c) => '\\' + c) + '%';
const sqlOp = (op: string) => sql.raw(op === '!=' ? '<>' : op);
const TRUE = sql<SqlBool>`(1 = 1)`;
const FALSE = sql<SqlBool>`(1 = 0)`;

export interface CompiledFilter {
  where?: Sql;
  /** The filter allows one row at most (a unique field compared with =): see FieldSpec.unique. */
  pinned?: boolean;
  sort: { ref: RawBuilder<unknown>; desc: boolean }[];
  skip?: number;
  limit?: number | 'none';
}

/** Field lookup by own property only: a filter naming `toString` must not find Object.prototype's. */
const own = (fields: Record<string, FieldSpec>, name: string): FieldSpec | undefined => (Object.hasOwn(fields, name) ? fields[name] : undefined);

export function compileQuery(q: Query, fields: Record<string, FieldSpec>, d: DialectHelpers): CompiledFilter {
  let conditions = 0;
  const known = () => Object.keys(fields).map((f) => (fields[f].type === 'tags' ? `${f}.<key>` : f)).join(', ');

  function resolve(name: string, pos: number): Resolved {
    const spec = own(fields, name);
    if (spec) {
      if (spec.type === 'tags') throw new FilterError(pos, `'${name}' is a map: compare one key, e.g. ${name}.env = "prod"`);
      return { spec, ref: fieldRef(spec, d.name), type: spec.type, name };
    }
    const dot = name.indexOf('.');
    const parent = dot > 0 ? own(fields, name.slice(0, dot)) : undefined;
    if (parent?.type === 'tags' && dot < name.length - 1) {
      const tagKey = name.slice(dot + 1);
      // The key becomes part of a JSON path: keep it to plain text.
      if (/["\\\x00-\x1f]/.test(tagKey)) throw new FilterError(pos, 'tag keys in filters may not contain quotes, backslashes or control characters');
      return { spec: parent, ref: sql.ref('t.value'), type: 'tag', tagKey, name };
    }
    throw new FilterError(pos, `unknown field '${name}': the filterable fields are ${known()}`);
  }

  const kindOf = (t: Resolved['type']) => (t === 'datetime' ? 'datetime' : t === 'number' ? 'number' : t === 'boolean' ? 'bool' : 'string');

  /** `equality`: the operator is = or != (the only ones that take true, false or null). */
  function checkValue(f: Resolved, v: Literal, pos: number, equality: boolean) {
    if (v.kind === 'null' || v.kind === 'bool') {
      if (!equality) throw new FilterError(pos, `${v.kind === 'null' ? 'null' : 'true and false'} can only be compared with = or !=`);
    }
    if (v.kind === 'null') return;
    if (v.kind === 'string' && f.spec.encode) return;
    if (f.type === 'tag') {
      if (v.kind === 'string' || v.kind === 'bool') return;
      throw new FilterError(pos, `tags hold strings, booleans or null: '${f.name}' cannot be compared with a ${v.kind}`);
    }
    const want = kindOf(f.type);
    if (v.kind !== want) {
      const hint = want === 'datetime' ? ', e.g. datetime(2024-01-31T12:00:00Z)' : want === 'string' ? ' in double quotes' : '';
      throw new FilterError(pos, `'${f.name}' is a ${want === 'bool' ? 'boolean' : want} field: compare it with a ${want === 'bool' ? 'true or false' : want}${hint}, not a ${v.kind}`);
    }
  }

  const lit = (v: Literal) => (v.kind === 'bool' ? (v.value ? 1 : 0) : v.kind === 'null' ? null : v.value);
  /** A literal as the field stores it (hashed fields compare hashes). */
  const litFor = (f: Resolved, v: Literal) => (f.spec.encode && v.kind === 'string' ? f.spec.encode(v.value) : lit(v));

  function setSpec(lhs: { name: string; pos: number }, fn: string): FieldSpec {
    const spec = own(fields, lhs.name);
    if (!spec) throw new FilterError(lhs.pos, `unknown field '${lhs.name}': the filterable fields are ${known()}`);
    if (spec.type !== 'set') throw new FilterError(lhs.pos, `${fn}() takes a list field such as roleAttributes; '${lhs.name}' is not one`);
    return spec;
  }

  /** A set's elements: the role-attribute index when the field has one, else the JSON array itself. */
  function elements(spec: FieldSpec) {
    if (spec.indexed) {
      return {
        value: sql.ref('r.attribute'),
        any: (cond: Sql) => sql<SqlBool>`(${sql.ref('e.id')} in (select r.entity_id from entity_role_attributes r where ${cond}))`,
        count: sql<number>`(select count(*) from entity_role_attributes r where r.entity_id = ${sql.ref('e.id')})`,
      };
    }
    const m = spec.members;
    if (m) {
      const own = sql<SqlBool>`${sql.ref(`je.${m.owner}`)} = ${sql.ref('e.id')}${m.where ? sql.raw(` and je.${m.where}`) : sql``}`;
      return {
        value: sql.ref(`je.${m.value}`),
        any: (cond: Sql) => sql<SqlBool>`exists (select 1 from ${sql.table(m.table)} je where ${own} and ${cond})`,
        count: sql<number>`(select count(*) from ${sql.table(m.table)} je where ${own})`,
      };
    }
    const from = d.setElements(sql.ref(spec.column));
    return {
      value: sql.ref('je.value'),
      any: (cond: Sql) => sql<SqlBool>`exists (select 1 from ${from} where ${cond})`,
      count: d.setLength(sql.ref(spec.column)),
    };
  }

  /** For set functions: the condition on one element, and how elements combine. */
  function setCondition(lhs: Extract<Operand, { kind: 'set' }>, element: (value: RawBuilder<unknown>) => Sql): Sql {
    const el = elements(setSpec(lhs, lhs.fn));
    if (lhs.fn === 'anyOf') return el.any(element(el.value));
    return sql<SqlBool>`(not ${el.any(sql<SqlBool>`not (${element(el.value)})`)})`;
  }

  /** A condition on one tag's value (t.value), for entities whose tag has that kind. */
  const tagCondition = (f: Resolved, kind: 'string' | 'bool', cond: Sql) =>
    sql<SqlBool>`(${sql.ref('e.id')} in (select t.entity_id from entity_tags t where t.tag_key = ${f.tagKey!} and t.kind = ${kind} and ${cond}))`;

  /** A comparison-like condition applied to an operand: a plain field, a set's elements, or a set's count. */
  function onOperand(lhs: Operand, pos: number, kinds: 'string' | 'ordered' | 'any', build: (ref: RawBuilder<unknown>, f: Resolved) => Sql, check: (f: Resolved) => void): Sql {
    if (lhs.kind === 'set') {
      if (lhs.fn === 'count') {
        const f: Resolved = { spec: own(fields, lhs.name)!, ref: elements(setSpec(lhs, 'count')).count, type: 'number', name: `count(${lhs.name})` };
        check(f);
        if (kinds === 'string') throw new FilterError(pos, 'count() is a number: use =, !=, <, <=, >, >=, in or between');
        return build(f.ref, f);
      }
      const f: Resolved = { spec: setSpec(lhs, lhs.fn), ref: sql.ref('r.attribute'), type: 'string', name: `${lhs.fn}(${lhs.name})` };
      check(f);
      return setCondition(lhs, (v) => build(v, f));
    }
    const f = resolve(lhs.name, lhs.pos);
    if (f.type === 'set') throw new FilterError(lhs.pos, `'${lhs.name}' is a list: use anyOf(${lhs.name}), allOf(${lhs.name}), count(${lhs.name}) or isEmpty(${lhs.name})`);
    if (kinds === 'string' && f.type !== 'string' && f.type !== 'tag') throw new FilterError(pos, `contains and icontains apply to text fields; '${f.name}' is a ${f.type} field`);
    if (kinds === 'ordered' && f.type === 'boolean') throw new FilterError(pos, `'${f.name}' is a boolean field: use = or !=`);
    if (kinds === 'string' && f.spec.encode) throw new FilterError(pos, `contains and icontains do not apply to '${f.name}': compare it with =, != or in`);
    check(f);
    return f.type === 'tag' ? tagCondition(f, 'string', build(f.ref, f)) : build(f.ref, f);
  }

  /** Whether `e` holds only for the row a unique field names (`name = "x"`, alone or and-ed with more). */
  function pins(e: Expr): boolean {
    if (e.kind === 'and') return pins(e.left) || pins(e.right);
    if (e.kind !== 'cmp' || e.op !== '=' || e.lhs.kind !== 'field' || e.rhs.kind !== 'string') return false;
    return !!own(fields, e.lhs.name)?.unique;
  }

  function expr(e: Expr): Sql {
    const leaf = e.kind !== 'and' && e.kind !== 'or' && e.kind !== 'not';
    if (leaf && ++conditions > MAX_CONDITIONS) throw new FilterError(1, `the filter has more than ${MAX_CONDITIONS} conditions`);
    switch (e.kind) {
      case 'and':
      case 'or':
        return sql<SqlBool>`(${expr(e.left)} ${sql.raw(e.kind)} ${expr(e.right)})`;
      case 'not':
        return sql<SqlBool>`(not ${expr(e.expr)})`;
      case 'const':
        return e.value ? TRUE : FALSE;
      case 'boolField': {
        const f = resolve(e.name, e.pos);
        if (f.type !== 'boolean') throw new FilterError(e.pos, `'${e.name}' is not a boolean field: compare it with an operator (=, !=, contains, ...)`);
        return sql<SqlBool>`(${f.ref} = 1)`;
      }
      case 'isEmpty': {
        return sql<SqlBool>`(${elements(setSpec(e, 'isEmpty')).count} = 0)`;
      }
      case 'cmp': {
        const { op, rhs } = e;
        if (rhs.kind === 'null' && e.lhs.kind === 'field') {
          if (op !== '=' && op !== '!=') throw new FilterError(e.pos, 'null can only be compared with = or !=');
          const f = resolve(e.lhs.name, e.lhs.pos);
          if (f.type === 'set') throw new FilterError(e.lhs.pos, `'${f.name}' is a list: use isEmpty(${f.name})`);
          if (f.type === 'tag') {
            const hasValue = sql<SqlBool>`(${sql.ref('e.id')} in (select t.entity_id from entity_tags t where t.tag_key = ${f.tagKey!} and t.kind <> 'null'))`;
            return op === '=' ? sql<SqlBool>`(not ${hasValue})` : hasValue;
          }
          return op === '=' ? sql<SqlBool>`(${f.ref} is null)` : sql<SqlBool>`(${f.ref} is not null)`;
        }
        const ordered = op !== '=' && op !== '!=';
        if (rhs.kind === 'bool' && e.lhs.kind === 'field' && !ordered) {
          const f = resolve(e.lhs.name, e.lhs.pos);
          // A boolean tag matches only boolean values: != true means "is false".
          if (f.type === 'tag') return tagCondition(f, 'bool', sql<SqlBool>`t.value = ${String(op === '=' ? rhs.value : !rhs.value)}`);
        }
        return onOperand(
          e.lhs, e.pos, ordered ? 'ordered' : 'any',
          (ref, f) => {
            return NOT_NULL(ref, sql<SqlBool>`${ref} ${sqlOp(op)} ${litFor(f, rhs)}`);
          },
          (f) => checkValue(f, rhs, e.pos, !ordered),
        );
      }
      case 'contains': {
        const rhs = e.rhs;
        if (rhs.kind !== 'string' && rhs.kind !== 'number') throw new FilterError(e.pos, 'contains and icontains take a "string"');
        const text = rhs.kind === 'number' ? String(rhs.value) : rhs.value;
        const cond = onOperand(
          e.lhs, e.pos, 'string',
          (ref) => NOT_NULL(ref, e.ci ? d.like(sql`lower(${ref})`, likePattern(text.toLowerCase())) : d.like(ref, likePattern(text))),
          () => {},
        );
        return e.negated ? sql<SqlBool>`(not ${cond})` : cond;
      }
      case 'in': {
        const cond = onOperand(
          e.lhs, e.pos, 'any',
          (ref, f) => NOT_NULL(ref, sql<SqlBool>`${ref} in (${sql.join(e.values.map((v) => litFor(f, v)))})`),
          (f) => {
            if (f.type === 'boolean') throw new FilterError(e.pos, `'${f.name}' is a boolean field: use = or !=`);
            checkValue(f, e.values[0], e.pos, false);
          },
        );
        return e.negated ? sql<SqlBool>`(not ${cond})` : cond;
      }
      case 'between': {
        if (e.low.kind !== e.high.kind) throw new FilterError(e.pos, 'between takes two values of one kind');
        const cond = onOperand(
          e.lhs, e.pos, 'ordered',
          (ref) => NOT_NULL(ref, sql<SqlBool>`(${ref} >= ${lit(e.low)} and ${ref} <= ${lit(e.high)})`),
          (f) => {
            if (e.low.kind !== 'number' && e.low.kind !== 'datetime') throw new FilterError(e.pos, 'between takes numbers or datetimes');
            checkValue(f, e.low, e.pos, false);
          },
        );
        return e.negated ? sql<SqlBool>`(not ${cond})` : cond;
      }
    }
  }

  const sort = q.sort.map((s) => {
    const spec = own(fields, s.name);
    if (!spec) throw new FilterError(s.pos, `cannot sort by unknown field '${s.name}': the sortable fields are ${sortable(fields)}`, 'INVALID_SORT_IDENTIFIER');
    if (!spec.sortable) throw new FilterError(s.pos, `cannot sort by '${s.name}': the sortable fields are ${sortable(fields)}`, 'INVALID_SORT_IDENTIFIER');
    return { ref: fieldRef(spec, d.name), desc: s.desc };
  });
  return { where: q.where ? expr(q.where) : undefined, pinned: !!q.where && pins(q.where), sort, skip: q.skip, limit: q.limit };
}

const sortable = (fields: Record<string, FieldSpec>) =>
  Object.entries(fields)
    .filter(([, f]) => f.sortable)
    .map(([n]) => n)
    .join(', ');
