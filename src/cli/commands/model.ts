// `ztc export` and `ztc import`: the network model as a file (YAML or JSON) kept next to code, and
// the controller made to match it (GET /export and POST /import, our extension).
import fs from 'node:fs';
import { Command } from 'commander';
import { CliError } from '../errors.js';
import { parseFormat, print } from '../output.js';
import { expectOk } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { withTransport } from './resources.js';

const API = '/edge/management/v1';

interface Step {
  action: 'create' | 'update' | 'delete';
  kind: string;
  name: string;
  changes?: { field: string; from: unknown; to: unknown }[];
}

const short = (v: unknown) => {
  const s = JSON.stringify(v) ?? 'null';
  return s.length > 60 ? s.slice(0, 59) + '…' : s;
};

/** The plan as a diff: + create, ~ update (each field from → to), - delete. */
/** The plan as a diff; a large one is listed only in part by the controller, which then counts the rest. */
export function renderPlan(plan: Step[], more?: { omitted?: number; counts?: Record<Step['action'], number> }): string {
  if (!plan.length) return 'nothing to change: the controller already matches the document\n';
  const sign = { create: '+', update: '~', delete: '-' } as const;
  const lines = plan.flatMap((s) => [`${sign[s.action]} ${s.kind} ${s.name}`, ...(s.changes ?? []).map((c) => `    ${c.field}: ${short(c.from)} → ${short(c.to)}`)]);
  if (more?.omitted) lines.push(`... and ${more.omitted} more`);
  const count = (a: Step['action']) => more?.counts?.[a] ?? plan.filter((s) => s.action === a).length;
  return `${lines.join('\n')}\n${count('create')} to create, ${count('update')} to update, ${count('delete')} to delete\n`;
}

/**
 * Writes what arrives as it arrives (the controller sends a page of entities at a time), and on a
 * terminal says how far it got. JSON comes in the API's envelope: everything between `{"data":`
 * and the final `,"meta":...}` is the document, so the tail is held back until the end.
 */
function exportWriter(json: boolean) {
  const PREFIX = '{"data":';
  const HOLD = 4096;
  let head = json ? '' : undefined;
  let held = '';
  let bytes = 0;
  let kind = '';
  let shown = 0;
  const tell = (done = false) => {
    if (!process.stderr.isTTY) return;
    const now = Date.now();
    if (!done && now - shown < 500) return;
    shown = now;
    process.stderr.write(`\r… ${(bytes / 1048576).toFixed(1)} MB${kind ? ` (${kind})` : ''}${done ? ', done\n' : ''}`);
  };
  return {
    write(chunk: string) {
      bytes += Buffer.byteLength(chunk);
      const kinds = json ? [...chunk.matchAll(/"(\w+)":\[/g)] : [...chunk.matchAll(/^(\w+):/gm)];
      if (kinds.length) kind = kinds[kinds.length - 1][1];
      tell();
      if (!json) return void process.stdout.write(chunk);
      if (head !== undefined) {
        head += chunk;
        if (head.length < PREFIX.length) return;
        if (!head.startsWith(PREFIX)) throw new CliError('the controller answered something other than the export document');
        chunk = head.slice(PREFIX.length);
        head = undefined;
      }
      held += chunk;
      if (held.length > HOLD) {
        process.stdout.write(held.slice(0, held.length - HOLD));
        held = held.slice(held.length - HOLD);
      }
    },
    end() {
      tell(true);
      if (!json) return;
      const at = held.lastIndexOf(',"meta":');
      process.stdout.write((at < 0 ? held : held.slice(0, at)) + '\n');
    },
  };
}

export function exportCommand(): Command {
  return targetOptions(new Command('export').description('write the whole network model (references by name, no ids, no secrets) as YAML, or JSON with -o json')).action(
    async (opts: CommonOpts) => {
      const format = opts.output === 'table' || !opts.output ? 'yaml' : opts.output;
      if (format !== 'yaml' && format !== 'json') throw new CliError(`Unknown output format '${opts.output}': use yaml (the default) or json`);
      const out = exportWriter(format === 'json');
      await withTransport(opts, async (t) => expectOk(await t.download(`${API}/export`, format === 'json' ? 'application/json' : 'application/yaml', (c) => out.write(c)), 'Exporting the model'));
      out.end();
    },
  );
}

export function importCommand(): Command {
  return targetOptions(new Command('import').description('make the controller match a model file from ztc export, in one transaction; prints the plan as a diff'))
    .argument('<file>', 'the YAML or JSON document (- for standard input)')
    .option('--dry-run', 'only print the plan')
    .option('--prune', 'also delete what the file does not name (system entities stay)')
    .action(async (file: string, opts: CommonOpts & { dryRun?: boolean; prune?: boolean }) => {
      const format = parseFormat(opts.output);
      let text: string;
      try {
        text = fs.readFileSync(file === '-' ? 0 : file, 'utf8');
      } catch (e) {
        throw new CliError(`cannot read ${file}: ${(e as Error).message}`);
      }
      let doc: unknown;
      try {
        // YAML is a superset of JSON: one parser reads both.
        doc = (await import('yaml')).default.parse(text);
      } catch (e) {
        throw new CliError(`${file} is not YAML or JSON: ${(e as Error).message.split('\n')[0]}`);
      }
      const q = new URLSearchParams({ ...(opts.dryRun ? { dryRun: 'true' } : {}), ...(opts.prune ? { prune: 'true' } : {}) });
      const result = await withTransport(opts, async (t) => expectOk(await t.request('POST', `${API}/import${q.size ? `?${q}` : ''}`, doc), 'Importing the model')?.data as { plan: Step[]; applied: boolean; omitted?: number; counts?: Record<Step['action'], number> });
      if (format !== 'table') return print(result, format);
      process.stdout.write(renderPlan(result.plan, result));
      if (result.plan.length) process.stdout.write(result.applied ? 'applied\n' : 'dry run: nothing changed\n');
    });
}
