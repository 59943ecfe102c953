// The filter language entry point used by every list: text -> checked SQL pieces, or a 400.
import { ApiError } from '../../model/errors.js';
import type { FieldSpec } from '../../model/resource.js';
import type { DialectHelpers } from '../dialect.js';
import { FilterError } from './ast.js';
import { compileQuery, type CompiledFilter } from './compile.js';
import { parseFilter } from './parser.js';

export type { CompiledFilter };

export function compileFilter(text: string | undefined, fields: Record<string, FieldSpec>, dialect: DialectHelpers): CompiledFilter {
  if (!text || !text.trim()) return { sort: [] };
  try {
    return compileQuery(parseFilter(text), fields, dialect);
  } catch (err) {
    if (!(err instanceof FilterError)) throw err;
    // A bad `sort by` inside the filter is INVALID_FILTER, as upstream answers it (INVALID_SORT_IDENTIFIER
    // is for the `sort=` parameter, below).
    throw new ApiError(400, 'INVALID_FILTER', `Invalid filter at position ${err.pos}: ${err.reason}`, { field: 'filter', reason: err.reason, value: text });
  }
}

/** The `sort=` query parameter, read as upstream does: the tail of `true sort by <value>`. */
export function compileSortParam(text: string, fields: Record<string, FieldSpec>, dialect: DialectHelpers): CompiledFilter['sort'] {
  try {
    const q = parseFilter(`true sort by ${text}`);
    if (q.skip !== undefined || q.limit !== undefined) throw new FilterError(1, 'sort takes field names, each optionally followed by asc or desc');
    return compileQuery(q, fields, dialect).sort;
  } catch (err) {
    if (!(err instanceof FilterError)) throw err;
    throw new ApiError(400, 'INVALID_SORT_IDENTIFIER', `Invalid sort: ${err.reason}`, { field: 'sort', reason: err.reason, value: text });
  }
}
