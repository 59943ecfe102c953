// The table and field views for people: plain padded text (no rendering library, so a command
// starts in a few tens of milliseconds). Cells are cut with '…' to fit the terminal.

/**
 * The value at a dotted path ('primary.updb.allowed'), or undefined. Through a list, each item's
 * ('listenerAddresses.address': every listener's address).
 */
export const at = (row: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => {
    if (Array.isArray(v) && !/^\d+$/.test(k)) return v.map((x) => (x && typeof x === 'object' ? (x as Record<string, unknown>)[k] : undefined)).filter((x) => x !== undefined);
    return v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  }, row);

/**
 * A column as a resource declares it: `path`, `label=path`, alternatives `label=a|b` (the first
 * present wins), and `path@plural` for ids the list command turns into names of that resource
 * (`label=path@plural/field` for another field of it), stored in the row under the label.
 */
export interface Column { label: string; paths: string[]; ref?: { plural: string; field: string } }

export function parseColumn(spec: string): Column {
  const eq = spec.indexOf('=');
  const label = eq > 0 ? spec.slice(0, eq) : undefined;
  const [body, target] = spec.slice(eq + 1).split('@');
  const paths = body.split('|');
  const [plural, field] = (target ?? '').split('/');
  return { label: label ?? paths[0], paths, ...(target ? { ref: { plural, field: field ?? 'name' } } : {}) };
}

const value = (row: unknown, c: Column) => (c.ref ? [c.label] : c.paths).map((p) => at(row, p)).find((v) => v !== undefined && v !== null && v !== '');

/** One value as a person reads it: references by name, lists joined, objects as k=v without links. */
export function cell(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) return v.map(cell).join(', ');
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    // References ({id, name, _links}) and role display entries ({role, name}) read as their name.
    if (typeof o.name === 'string' && ('id' in o || 'entity' in o || '_links' in o || 'role' in o)) return o.name;
    // Empty parts are left out: `versionInfo os=, arch=, ...` said nothing.
    return Object.entries(o)
      .filter(([k, x]) => k !== '_links' && cell(x) !== '')
      .map(([k, x]) => `${k}=${x && typeof x === 'object' && !Array.isArray(x) ? `{${cell(x)}}` : cell(x)}`)
      .join(', ');
  }
  return String(v);
}

/** 'service.name' → SERVICE, 'identityRolesDisplay' → IDENTITY ROLES, 'primary.updb.allowed' → UPDB ALLOWED. */
const header = (label: string) => {
  const parts = label.replace(/Display$/, '').split('.');
  if (parts.length > 1 && parts.at(-1) === 'name') parts.pop();
  return parts.slice(-2).join(' ').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();
};

const cut = (s: string, width: number) => (s.length <= width ? s : width <= 1 ? '…'.slice(0, width) : s.slice(0, width - 1) + '…');

/** The terminal's width, or no limit when the output goes to a file or a pipe. */
const terminalWidth = () => (process.stdout.isTTY && process.stdout.columns ? process.stdout.columns : Infinity);

const GAP = 2;
const MAX_CELL = 60;

/** `whole`: labels of columns never cut (a fingerprint that is compared with another is useless cut). */
export function renderTable(rows: unknown[], specs: string[], width = terminalWidth(), whole: string[] = []): string {
  if (!rows.length) return '(none)';
  const columns = specs.map(parseColumn);
  const text = rows.map((r) => columns.map((c) => cell(value(r, c)).replace(/\s*\n\s*/g, ' ')));
  const heads = columns.map((c) => header(c.label));
  const kept = columns.map((c) => whole.includes(c.label));
  const widths = columns.map((_, i) => Math.min(kept[i] ? Infinity : MAX_CELL, Math.max(heads[i].length, ...text.map((t) => t[i].length))));
  // Too wide for the terminal: narrow the widest column, one character at a time.
  const total = () => widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1);
  while (total() > width) {
    const narrowable = widths.map((w, i) => (kept[i] ? 0 : w));
    const i = narrowable.indexOf(Math.max(...narrowable));
    if (widths[i] <= 4) break;
    widths[i]--;
  }
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? cut(c, widths[i]) : cut(c, widths[i]).padEnd(widths[i] + GAP))).join('').trimEnd();
  return [line(heads), ...text.map(line)].join('\n');
}

/** One entity as `field  value` lines; fields with nothing in them (null, '', [], {}) are left out. */
export function renderFields(row: Record<string, unknown>, width = terminalWidth(), whole: string[] = []): string {
  const keys = Object.keys(row).filter((k) => k !== '_links' && cell(row[k]) !== '');
  if (!keys.length) return '(no fields set)';
  const pad = Math.max(...keys.map((k) => k.length)) + GAP;
  return keys.map((k) => `${k.padEnd(pad)}${cut(cell(row[k]).replace(/\s*\n\s*/g, ' '), whole.includes(k) ? Infinity : Math.max(8, width - pad))}`.trimEnd()).join('\n');
}
