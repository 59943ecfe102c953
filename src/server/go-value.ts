// Upstream renders an error cause's value with Go's fmt "%v" (controller/response/responder.go), so
// clients see a string whatever the field's type, and "<nil>" for a missing value. Its CLI prints the
// value with %s: a cause without one shows as "[%!s(<nil>)]". This renders values the same way.

/** A JSON value as Go's %v prints the same value decoded into interface{} (maps with sorted keys). */
export function goValue(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return `[${v.map(goValue).join(' ')}]`;
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') {
    const keys = Object.keys(v as object).sort();
    return `map[${keys.map((k) => `${k}:${goValue((v as Record<string, unknown>)[k])}`).join(' ')}]`;
  }
  return String(v);
}

/** float64 under %v is %g with the shortest digits: exponent form from 1e+06 up and below 1e-04. */
function goNumber(n: number): string {
  if (!Number.isFinite(n)) return Number.isNaN(n) ? 'NaN' : n > 0 ? '+Inf' : '-Inf';
  if (n === 0) return Object.is(n, -0) ? '-0' : '0';
  const [mantissa, e] = n.toExponential().split('e') as [string, string];
  const exp = Number(e);
  if (exp >= -4 && exp < 6) return String(n);
  const sign = exp < 0 ? '-' : '+';
  const digits = String(Math.abs(exp));
  return `${mantissa}e${sign}${digits.padStart(2, '0')}`;
}
