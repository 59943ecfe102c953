// The filter language (ZitiQL) as data: what the parser produces and the compiler consumes.

export type Literal =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'bool'; value: boolean }
  | { kind: 'null' }
  | { kind: 'datetime'; value: string };

export type SetFn = 'anyOf' | 'allOf' | 'count';

export type Operand = { kind: 'field'; name: string; pos: number } | { kind: 'set'; fn: SetFn; name: string; pos: number };

export type CmpOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type Expr =
  | { kind: 'and' | 'or'; left: Expr; right: Expr }
  | { kind: 'not'; expr: Expr }
  | { kind: 'const'; value: boolean }
  | { kind: 'cmp'; op: CmpOp; lhs: Operand; rhs: Literal; pos: number }
  | { kind: 'contains'; lhs: Operand; rhs: Literal; ci: boolean; negated: boolean; pos: number }
  | { kind: 'in'; lhs: Operand; values: Literal[]; negated: boolean; pos: number }
  | { kind: 'between'; lhs: Operand; low: Literal; high: Literal; negated: boolean; pos: number }
  | { kind: 'isEmpty'; name: string; pos: number }
  | { kind: 'boolField'; name: string; pos: number };

export interface SortField {
  name: string;
  desc: boolean;
  pos: number;
}

export interface Query {
  where?: Expr;
  sort: SortField[];
  skip?: number;
  limit?: number | 'none';
}

export class FilterError extends Error {
  constructor(
    readonly pos: number,
    readonly reason: string,
    readonly code: 'INVALID_FILTER' | 'INVALID_SORT_IDENTIFIER' = 'INVALID_FILTER',
  ) {
    super(reason);
  }
}
