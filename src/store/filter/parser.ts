// Recursive-descent parser: filter text -> Query. Precedence: not > and > or. Every error names the
// position and what was expected there.
import { FilterError, type CmpOp, type Expr, type Literal, type Operand, type Query, type SetFn } from './ast.js';
import { tokenize, type Token } from './lexer.js';

const KEYWORDS = new Set([
  'and', 'or', 'not', 'true', 'false', 'null', 'contains', 'icontains', 'in', 'between', 'sort', 'by', 'asc', 'desc',
  'skip', 'limit', 'none', 'anyof', 'allof', 'count', 'isempty', 'where', 'from',
]);
const SET_FNS: Record<string, SetFn> = { anyof: 'anyOf', allof: 'allOf', count: 'count' };
const OPERATORS = '=, !=, <, <=, >, >=, contains, icontains, in, between (or not before contains, icontains, in, between)';
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export const MAX_FILTER_DEPTH = 64;

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly toks: Token[]) {}

  private get t(): Token {
    return this.toks[this.i];
  }
  private isKw(word: string, tok = this.t): boolean {
    return tok.kind === 'ident' && !tok.quoted && tok.value.toLowerCase() === word;
  }
  private describe(tok: Token): string {
    return tok.kind === 'eof' ? 'the end of the filter' : `'${tok.text}'`;
  }
  private fail(expected: string, tok = this.t): never {
    throw new FilterError(tok.pos, `expected ${expected}, found ${this.describe(tok)}`);
  }
  private punct(ch: string, what = `'${ch}'`) {
    if (this.t.kind !== 'punct' || this.t.text !== ch) this.fail(what);
    this.i++;
  }
  private kw(word: string) {
    if (!this.isKw(word)) this.fail(`'${word}'`);
    this.i++;
  }

  query(): Query {
    const q: Query = { sort: [] };
    const clause = () => this.isKw('sort') || this.isKw('skip') || this.isKw('limit');
    if (this.t.kind !== 'eof' && !clause()) q.where = this.or();
    const seen = new Set<string>();
    while (this.t.kind !== 'eof') {
      const tok = this.t;
      const word = tok.kind === 'ident' && !tok.quoted ? tok.value.toLowerCase() : '';
      if (!['sort', 'skip', 'limit'].includes(word)) {
        this.fail(q.where || seen.size ? "'and', 'or', 'sort by', 'skip', 'limit' or the end of the filter" : 'a condition');
      }
      if (seen.has(word)) throw new FilterError(tok.pos, `'${word}' may appear only once`);
      seen.add(word);
      this.i++;
      if (word === 'sort') {
        this.kw('by');
        do {
          const f = this.t;
          if (f.kind !== 'ident' || (!f.quoted && KEYWORDS.has(f.value.toLowerCase()))) this.fail('a field name to sort by');
          this.i++;
          let desc = false;
          if (this.isKw('asc')) this.i++;
          else if (this.isKw('desc')) {
            desc = true;
            this.i++;
          }
          q.sort.push({ name: f.value, desc, pos: f.pos });
        } while (this.t.kind === 'punct' && this.t.text === ',' && ++this.i);
      } else if (word === 'skip') {
        q.skip = this.count('skip');
      } else if (this.isKw('none')) {
        this.i++;
        q.limit = 'none';
      } else {
        q.limit = this.count('limit');
      }
    }
    return q;
  }

  private count(what: string): number {
    const tok = this.t;
    if (tok.kind !== 'number' || !/^\d+$/.test(tok.text)) this.fail(`a whole number after ${what}${what === 'limit' ? " (or 'none')" : ''}`);
    const n = Number(tok.text);
    if (!Number.isSafeInteger(n)) throw new FilterError(tok.pos, `${what} ${tok.text} is too large`);
    this.i++;
    return n;
  }

  private or(): Expr {
    let left = this.and();
    while (this.isKw('or')) {
      this.i++;
      left = { kind: 'or', left, right: this.and() };
    }
    return left;
  }

  private and(): Expr {
    let left = this.not();
    while (this.isKw('and')) {
      this.i++;
      left = { kind: 'and', left, right: this.not() };
    }
    return left;
  }

  private not(): Expr {
    if (++this.depth > MAX_FILTER_DEPTH) throw new FilterError(this.t.pos, `the filter nests deeper than ${MAX_FILTER_DEPTH} levels`);
    try {
      if (this.isKw('not')) {
        this.i++;
        return { kind: 'not', expr: this.not() };
      }
      return this.primary();
    } finally {
      this.depth--;
    }
  }

  private primary(): Expr {
    const tok = this.t;
    if (tok.kind === 'punct' && tok.text === '(') {
      this.i++;
      const e = this.or();
      this.punct(')', "')' or 'and' / 'or'");
      return e;
    }
    if (this.isKw('true') || this.isKw('false')) {
      this.i++;
      return { kind: 'const', value: tok.value.toLowerCase() === 'true' };
    }
    if (this.isKw('isempty')) {
      this.i++;
      this.punct('(', "'(' after isEmpty");
      const name = this.fieldName();
      this.punct(')', "')'");
      return { kind: 'isEmpty', name, pos: tok.pos };
    }
    const lhs = this.operand();
    return this.operation(lhs);
  }

  private fieldName(): string {
    const tok = this.t;
    if (tok.kind !== 'ident' || (!tok.quoted && KEYWORDS.has(tok.value.toLowerCase()))) this.fail('a field name');
    this.i++;
    return tok.value;
  }

  private operand(): Operand {
    const tok = this.t;
    const word = tok.value.toLowerCase();
    const fn = tok.kind === 'ident' && !tok.quoted && Object.hasOwn(SET_FNS, word) ? SET_FNS[word] : undefined;
    if (fn) {
      this.i++;
      this.punct('(', `'(' after ${fn}`);
      const name = this.fieldName();
      this.punct(')', "')'");
      return { kind: 'set', fn, name, pos: tok.pos };
    }
    if (tok.kind !== 'ident' || (!tok.quoted && KEYWORDS.has(tok.value.toLowerCase()))) this.fail('a field name, anyOf(...), allOf(...), count(...), isEmpty(...), true, false, not or (');
    this.i++;
    return { kind: 'field', name: tok.value, pos: tok.pos };
  }

  private operation(lhs: Operand): Expr {
    const tok = this.t;
    const pos = tok.pos;
    if (tok.kind === 'op') {
      this.i++;
      return { kind: 'cmp', op: tok.text as CmpOp, lhs, rhs: this.literal(), pos };
    }
    let negated = false;
    if (this.isKw('not')) {
      negated = true;
      this.i++;
      if (!['contains', 'icontains', 'in', 'between'].some((w) => this.isKw(w))) this.fail("contains, icontains, in or between after 'not'");
    }
    if (this.isKw('contains') || this.isKw('icontains')) {
      const ci = this.isKw('icontains');
      this.i++;
      return { kind: 'contains', lhs, rhs: this.literal(), ci, negated, pos };
    }
    if (this.isKw('in')) {
      this.i++;
      return { kind: 'in', lhs, values: this.list(), negated, pos };
    }
    if (this.isKw('between')) {
      this.i++;
      const low = this.literal();
      this.kw('and');
      return { kind: 'between', lhs, low, high: this.literal(), negated, pos };
    }
    // A field on its own is a boolean test (`disabled`); a set function needs an operator.
    const next = this.t;
    const clauseWord = ['and', 'or', 'sort', 'skip', 'limit'].some((w) => this.isKw(w, next));
    if (lhs.kind === 'field' && next.kind !== 'eof' && !clauseWord && !(next.kind === 'punct' && next.text === ')')) {
      this.fail(`an operator (${OPERATORS}) after ${lhs.name}`);
    }
    if (lhs.kind === 'field') return { kind: 'boolField', name: lhs.name, pos: lhs.pos };
    return this.fail(`an operator (${OPERATORS}) after ${lhs.fn}(${lhs.name})`);
  }

  private list(): Literal[] {
    this.punct('[', "'[' to start the list");
    const values: Literal[] = [];
    if (this.t.kind === 'punct' && this.t.text === ']') throw new FilterError(this.t.pos, 'an in-list may not be empty');
    for (;;) {
      const tok = this.t;
      const v = this.literal();
      if (v.kind === 'null' || v.kind === 'bool') throw new FilterError(tok.pos, 'in-lists hold strings, numbers or datetimes');
      if (values.length && values[0].kind !== v.kind) throw new FilterError(tok.pos, `every value of an in-list must be of one kind: this one is a ${v.kind}, the first a ${values[0].kind}`);
      values.push(v);
      if (this.t.kind === 'punct' && this.t.text === ',') {
        this.i++;
        continue;
      }
      this.punct(']', "',' or ']'");
      return values;
    }
  }

  private literal(): Literal {
    const tok = this.t;
    this.i++;
    switch (tok.kind) {
      case 'string':
        return { kind: 'string', value: tok.value };
      case 'number': {
        const n = Number(tok.text);
        if (!Number.isFinite(n)) throw new FilterError(tok.pos, `${tok.text} is out of range`);
        return { kind: 'number', value: n };
      }
      case 'datetime': {
        const ms = Date.parse(tok.value);
        if (!RFC3339.test(tok.value) || Number.isNaN(ms)) throw new FilterError(tok.pos, `'${tok.value}' is not an RFC 3339 date-time such as 2024-01-31T12:00:00Z`);
        return { kind: 'datetime', value: new Date(ms).toISOString() };
      }
      case 'ident': {
        const w = tok.quoted ? '' : tok.value.toLowerCase();
        if (w === 'true' || w === 'false') return { kind: 'bool', value: w === 'true' };
        if (w === 'null') return { kind: 'null' };
      }
    }
    this.i--;
    return this.fail('a value: a "string", a number, true, false, null or datetime(...)');
  }
}

export function parseFilter(text: string): Query {
  return new Parser(tokenize(text)).query();
}
