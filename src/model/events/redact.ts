// Secrets never leave the controller in an event: the states of an entity change are the stored row
// with every field that holds or derives from a secret replaced by a marker. Fields are recognised by
// name (passwords, tokens, JWTs, keys, salts, hashes, sealed values, one-time and recovery codes) and,
// in case a column's name does not say it, by value (a sealed value, a JWT, an API token, a private key).
// A marker rather than nothing, so an update shows that a secret field was part of the entity.

export const REDACTED = '[redacted]';

const SECRET_KEY = /pass(word|wd)?|secret|token|jwt|key|salt|hash|seal|otp|totp|recovery|private|credential|code/i;
const SECRET_VALUE = /^(v1:[A-Za-z0-9_-]{20,}|eyJ[\w-]*\.[\w-]*\.|ztt_|-----BEGIN [A-Z ]*PRIVATE KEY)/;

/** A copy of a stored row fit for an event: JSON text columns opened, secrets replaced. */
export function redactRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = SECRET_KEY.test(k) && v !== null && v !== undefined && v !== '' ? REDACTED : clean(v);
  return out;
}

function clean(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') {
    if (SECRET_VALUE.test(v)) return REDACTED;
    // JSON text columns (tags, role attributes, documents): shown as what they hold.
    const c = v.charCodeAt(0);
    if ((c === 123 || c === 91) && depth === 0) {
      try {
        return clean(JSON.parse(v), depth + 1);
      } catch {
        return v;
      }
    }
    return v;
  }
  if (Array.isArray(v)) return v.map((x) => clean(x, depth + 1));
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = SECRET_KEY.test(k) && x !== null && x !== '' ? REDACTED : clean(x, depth + 1);
    return out;
  }
  return v;
}
