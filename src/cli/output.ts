// What the CLI prints: a table for people, JSON or YAML for scripts. The renderers are imported
// when used, so a command that prints JSON (or nothing) never loads them.
import { CliError } from './errors.js';

export type Format = 'table' | 'json' | 'yaml';

export function parseFormat(value: string | undefined): Format {
  const f = (value ?? 'table').toLowerCase();
  if (f !== 'table' && f !== 'json' && f !== 'yaml') throw new CliError(`Unknown output format '${value}': use table, json or yaml`);
  return f;
}

export async function print(data: unknown, format: Format, view: { columns?: string[]; footer?: string; whole?: string[] } = {}) {
  if (format === 'json') return void process.stdout.write(JSON.stringify(data, null, 2) + '\n');
  if (format === 'yaml') return void process.stdout.write((await import('yaml')).default.stringify(data));
  if (Array.isArray(data)) {
    const { renderTable } = await import('./table.js');
    process.stdout.write(renderTable(data, view.columns ?? ['id', 'name'], undefined, view.whole) + '\n');
    if (view.footer) process.stdout.write(view.footer + '\n');
    return;
  }
  if (data && typeof data === 'object') {
    const { renderFields } = await import('./table.js');
    return void process.stdout.write(renderFields(data as Record<string, unknown>, undefined, view.whole) + '\n');
  }
  process.stdout.write(String(data) + '\n');
}

/** Progress of long work goes to stderr, so stdout stays clean for -o json. */
export const progress = (step: string) => process.stderr.write(`… ${step}\n`);
