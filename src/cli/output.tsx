// What the CLI prints: a table for people (rendered with ink), JSON or YAML for scripts.
import { Box, Text, renderToString } from 'ink';
import YAML from 'yaml';
import { CliError } from './transport.js';

export type Format = 'table' | 'json' | 'yaml';

export function parseFormat(value: string | undefined): Format {
  const f = (value ?? 'table').toLowerCase();
  if (f !== 'table' && f !== 'json' && f !== 'yaml') throw new CliError(`Unknown output format '${value}': use table, json or yaml`);
  return f;
}

const at = (row: unknown, path: string): unknown =>
  path.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), row);

export function cell(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (Array.isArray(v)) return v.map(cell).join(', ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

const header = (path: string) => path.split('.').slice(-2).join(' ').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase();

function Table({ rows, columns }: { rows: unknown[]; columns: string[] }) {
  const widths = columns.map((c) => Math.min(60, Math.max(header(c).length, ...rows.map((r) => cell(at(r, c)).length))));
  return (
    <Box flexDirection="column">
      <Box>
        {columns.map((c, i) => (
          <Box key={c} width={widths[i] + 2} flexShrink={0}>
            <Text bold>{header(c)}</Text>
          </Box>
        ))}
      </Box>
      {rows.map((r, n) => (
        <Box key={n}>
          {columns.map((c, i) => (
            <Box key={c} width={widths[i] + 2} flexShrink={0}>
              <Text wrap="truncate-end">{cell(at(r, c))}</Text>
            </Box>
          ))}
        </Box>
      ))}
    </Box>
  );
}

function Fields({ row }: { row: Record<string, unknown> }) {
  const keys = Object.keys(row).filter((k) => k !== '_links');
  const width = Math.max(...keys.map((k) => k.length)) + 2;
  return (
    <Box flexDirection="column">
      {keys.map((k) => (
        <Box key={k}>
          <Box width={width} flexShrink={0}>
            <Text bold>{k}</Text>
          </Box>
          <Text>{cell(row[k])}</Text>
        </Box>
      ))}
    </Box>
  );
}

const columnsWide = () => Math.max(process.stdout.columns || 0, 160);

export function renderTable(rows: unknown[], columns: string[]): string {
  if (!rows.length) return '(none)';
  return renderToString(<Table rows={rows} columns={columns} />, { columns: columnsWide() });
}

export function renderFields(row: Record<string, unknown>): string {
  return renderToString(<Fields row={row} />, { columns: columnsWide() });
}

export function print(data: unknown, format: Format, view: { columns?: string[]; footer?: string } = {}) {
  if (format === 'json') return void process.stdout.write(JSON.stringify(data, null, 2) + '\n');
  if (format === 'yaml') return void process.stdout.write(YAML.stringify(data));
  if (Array.isArray(data)) {
    process.stdout.write(renderTable(data, view.columns ?? ['id', 'name']) + '\n');
    if (view.footer) process.stdout.write(view.footer + '\n');
    return;
  }
  if (data && typeof data === 'object') return void process.stdout.write(renderFields(data as Record<string, unknown>) + '\n');
  process.stdout.write(String(data) + '\n');
}

/** Progress of long work goes to stderr, so stdout stays clean for -o json. */
export const progress = (step: string) => process.stderr.write(`… ${step}\n`);
