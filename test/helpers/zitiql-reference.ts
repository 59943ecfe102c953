// A reference for the filter language, written from the grammar and independent of the SQL compiler:
// prints an AST back to filter text, and evaluates it over API objects in memory.
import type { Expr, Literal, Operand, Query } from '../../src/store/filter/ast.js';

const str = (s: string) => '"' + s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t') + '"';

export function printLiteral(l: Literal): string {
  switch (l.kind) {
    case 'string':
      return str(l.value);
    case 'number':
      return String(l.value);
    case 'bool':
      return String(l.value);
    case 'null':
      return 'null';
    case 'datetime':
      return `datetime(${l.value})`;
  }
}

const printOperand = (o: Operand) => (o.kind === 'field' ? o.name : `${o.fn}(${o.name})`);

export function printExpr(e: Expr): string {
  switch (e.kind) {
    case 'and':
    case 'or':
      return `(${printExpr(e.left)} ${e.kind} ${printExpr(e.right)})`;
    case 'not':
      return `not ${printExpr(e.expr)}`;
    case 'const':
      return String(e.value);
    case 'boolField':
      return e.name;
    case 'isEmpty':
      return `isEmpty(${e.name})`;
    case 'cmp':
      return `${printOperand(e.lhs)} ${e.op} ${printLiteral(e.rhs)}`;
    case 'contains':
      return `${printOperand(e.lhs)} ${e.negated ? 'not ' : ''}${e.ci ? 'icontains' : 'contains'} ${printLiteral(e.rhs)}`;
    case 'in':
      return `${printOperand(e.lhs)} ${e.negated ? 'not ' : ''}in [${e.values.map(printLiteral).join(', ')}]`;
    case 'between':
      return `${printOperand(e.lhs)} ${e.negated ? 'not ' : ''}between ${printLiteral(e.low)} and ${printLiteral(e.high)}`;
  }
}

export function printQuery(q: Query): string {
  const parts: string[] = [];
  if (q.where) parts.push(printExpr(q.where));
  if (q.sort.length) parts.push('sort by ' + q.sort.map((s) => `${s.name} ${s.desc ? 'desc' : 'asc'}`).join(', '));
  if (q.skip !== undefined) parts.push(`skip ${q.skip}`);
  if (q.limit !== undefined) parts.push(`limit ${q.limit}`);
  return parts.join(' ');
}

type Row = Record<string, unknown>;
type Value = string | number | boolean | null;

/** The value of a field of an API object; `type` is the type id; a missing tag is null. */
function valueOf(row: Row, name: string): unknown {
  if (name.startsWith('tags.')) return (row.tags as Record<string, unknown> | null)?.[name.slice(5)] ?? null;
  if (name === 'type') return row.typeId;
  return row[name] ?? null;
}

const litValue = (l: Literal): Value => (l.kind === 'null' ? null : l.value);

function compare(a: unknown, op: string, b: Value): boolean {
  // Two-valued: any comparison with a missing value is false.
  if (a === null || a === undefined || b === null) return false;
  if (typeof a !== typeof b) return false;
  const x = a as string | number | boolean;
  switch (op) {
    case '=':
      return x === b;
    case '!=':
      return x !== b;
    case '<':
      return x < b;
    case '<=':
      return x <= b;
    case '>':
      return x > b;
    default:
      return x >= b;
  }
}

function onOperand(row: Row, lhs: Operand, test: (v: unknown) => boolean): boolean {
  if (lhs.kind === 'field') return test(valueOf(row, lhs.name));
  const list = (row[lhs.name] as string[] | null) ?? [];
  if (lhs.fn === 'count') return test(list.length);
  return lhs.fn === 'anyOf' ? list.some(test) : list.every(test);
}

export function evaluate(e: Expr, row: Row): boolean {
  switch (e.kind) {
    case 'and':
      return evaluate(e.left, row) && evaluate(e.right, row);
    case 'or':
      return evaluate(e.left, row) || evaluate(e.right, row);
    case 'not':
      return !evaluate(e.expr, row);
    case 'const':
      return e.value;
    case 'boolField':
      return valueOf(row, e.name) === true;
    case 'isEmpty':
      return ((row[e.name] as unknown[] | null) ?? []).length === 0;
    case 'cmp':
      if (e.rhs.kind === 'null' && e.lhs.kind === 'field') {
        const v = valueOf(row, e.lhs.name);
        return e.op === '=' ? v === null : v !== null;
      }
      return onOperand(row, e.lhs, (v) => compare(v, e.op, litValue(e.rhs)));
    case 'contains': {
      const needle = String(litValue(e.rhs));
      const hit = onOperand(row, e.lhs, (v) => typeof v === 'string' && (e.ci ? v.toLowerCase().includes(needle.toLowerCase()) : v.includes(needle)));
      return e.negated ? !hit : hit;
    }
    case 'in': {
      const hit = onOperand(row, e.lhs, (v) => v !== null && e.values.some((l) => litValue(l) === v));
      return e.negated ? !hit : hit;
    }
    case 'between': {
      const hit = onOperand(row, e.lhs, (v) => compare(v, '>=', litValue(e.low)) && compare(v, '<=', litValue(e.high)));
      return e.negated ? !hit : hit;
    }
  }
}
