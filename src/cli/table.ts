// The table and field views for people: plain padded text (no rendering library, so a command
// starts in a few tens of milliseconds). Cells are cut with '…' to fit the terminal.

const at = (row: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), row);

/** One value as a person reads it: references by name, lists joined, objects as k=v without links. */
export function cell(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) return v.map(cell).join(', ');
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.name === 'string' && ('id' in o || 'entity' in o || '_links' in o)) return o.name;
    return Object.entries(o)
      .filter(([k]) => k !== '_links')
      .map(([k, x]) => `${k}=${x && typeof x === 'object' && !Array.isArray(x) ? `{${cell(x)}}` : cell(x)}`)
      .join(', ');
  }
  return String(v);
}

const header = (path: string) => path.split('.').slice(-2).join(' ').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();

const cut = (s: string, width: number) => (s.length <= width ? s : width <= 1 ? '…'.slice(0, width) : s.slice(0, width - 1) + '…');

/** The terminal's width, or no limit when the output goes to a file or a pipe. */
const terminalWidth = () => (process.stdout.isTTY && process.stdout.columns ? process.stdout.columns : Infinity);

const GAP = 2;
const MAX_CELL = 60;

export function renderTable(rows: unknown[], columns: string[], width = terminalWidth()): string {
  if (!rows.length) return '(none)';
  const text = rows.map((r) => columns.map((c) => cell(at(r, c)).replace(/\s*\n\s*/g, ' ')));
  const heads = columns.map(header);
  const widths = columns.map((_, i) => Math.min(MAX_CELL, Math.max(heads[i].length, ...text.map((t) => t[i].length))));
  // Too wide for the terminal: narrow the widest column, one character at a time.
  const total = () => widths.reduce((a, b) => a + b, 0) + GAP * (widths.length - 1);
  while (total() > width) {
    const i = widths.indexOf(Math.max(...widths));
    if (widths[i] <= 4) break;
    widths[i]--;
  }
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? cut(c, widths[i]) : cut(c, widths[i]).padEnd(widths[i] + GAP))).join('').trimEnd();
  return [line(heads), ...text.map(line)].join('\n');
}

export function renderFields(row: Record<string, unknown>, width = terminalWidth()): string {
  const keys = Object.keys(row).filter((k) => k !== '_links');
  const pad = Math.max(...keys.map((k) => k.length)) + GAP;
  return keys.map((k) => `${k.padEnd(pad)}${cut(cell(row[k]).replace(/\s*\n\s*/g, ' '), Math.max(8, width - pad))}`.trimEnd()).join('\n');
}
