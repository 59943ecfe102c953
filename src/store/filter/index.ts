// The filter language entry point used by every list. Issue: the full ZitiQL grammar lives in
// parser.ts/compile.ts; this module keeps the contract the generic list relies on.
import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import { ApiError } from '../../model/errors.js';
import type { FieldSpec } from '../../model/resource.js';
import type { DialectHelpers } from '../dialect.js';

export interface CompiledQuery {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  where?: (eb: ExpressionBuilder<any, any>) => Expression<SqlBool>;
  sort: { column: string; desc: boolean }[];
  skip?: number;
  /** 'none' for `limit none`. */
  limit?: number | 'none';
}

const SIMPLE = /^\s*([A-Za-z_][\w.]*)\s+(=|contains)\s+"((?:[^"\\]|\\.)*)"\s*$/i;

export function compileFilter(text: string | undefined, fields: Record<string, FieldSpec>, _dialect: DialectHelpers): CompiledQuery {
  if (!text || !text.trim()) return { sort: [] };
  const m = SIMPLE.exec(text);
  if (!m) throw new ApiError(400, 'INVALID_FILTER', `The filter '${text}' is not supported: use field = "value" or field contains "value"`);
  const [, field, op, raw] = m;
  const spec = fields[field];
  if (!spec) throw new ApiError(400, 'INVALID_FILTER', `Unknown field '${field}' in filter; filterable fields: ${Object.keys(fields).join(', ')}`);
  const value = raw.replace(/\\(.)/g, '$1');
  const col = sql.ref(spec.column);
  if (op.toLowerCase() === '=') return { sort: [], where: (eb) => eb(col, '=', value) };
  const pattern = '%' + value.replace(/[\\%_]/g, (c) => '\\' + c) + '%';
  return { sort: [], where: () => sql<SqlBool>`${col} like ${pattern} escape '\\'` };
}
