// `ztc db snapshot|check|fix`: database maintenance, locally on a data dir or on a remote controller.
import path from 'node:path';
import { Command } from 'commander';
import { parseFormat, print } from '../output.js';
import { CliError, expectOk, type Transport } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { withTransport } from './resources.js';

const API = '/edge/management/v1';

interface RunState {
  inProgress: boolean;
  fixingErrors: boolean;
  tooManyErrors: boolean;
  error: string;
  results: { description: string; fixed: boolean }[];
}

/** Start a scan (or fix), show that it runs, and wait for its findings. */
async function integrity(t: Transport, fix: boolean): Promise<RunState> {
  expectOk(await t.request('POST', `${API}/database/${fix ? 'fix' : 'check'}-data-integrity`), fix ? 'Starting the integrity fix' : 'Starting the integrity scan');
  const started = Date.now();
  const tty = process.stderr.isTTY;
  for (let i = 0; ; i++) {
    const state = expectOk(await t.request('GET', `${API}/database/data-integrity-results`), 'Reading the integrity results')?.data as RunState;
    if (!state.inProgress) {
      if (tty) process.stderr.write('\r\x1b[K');
      return state;
    }
    const line = `… ${fix ? 'fixing' : 'scanning'} (${Math.round((Date.now() - started) / 1000)} s)`;
    if (tty) process.stderr.write(`\r${line}`);
    else if (i % 20 === 0) process.stderr.write(`${line}\n`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function dbCommand(): Command {
  const cmd = new Command('db').description('database maintenance: snapshots and integrity checks');
  targetOptions(cmd.command('snapshot').description('copy the live database into the data dir (snapshots/ztc-<time>.db; pg_dump on PostgreSQL)')).action(async (opts: CommonOpts) => {
    const format = parseFormat(opts.output);
    process.stderr.write('… taking a snapshot\n');
    const { data, where } = await withTransport(opts, async (t) => ({
      data: expectOk(await t.request('POST', `${API}/database/snapshot`), 'Taking a snapshot')?.data as { name: string; sizeBytes: number },
      where: t.describe,
    }));
    // The API names the file, not the server's path: locally the data dir completes it.
    const local = where.startsWith('data dir ') ? path.join(where.slice('data dir '.length), 'snapshots', data.name) : undefined;
    const out = local ? { ...data, path: local } : data;
    if (format === 'table') process.stdout.write(`snapshot written to ${local ?? `snapshots/${data.name} in the data dir of ${where}`} (${(data.sizeBytes / 1024).toFixed(0)} KiB)\n`);
    else await print(out, format);
  });
  for (const fix of [false, true]) {
    targetOptions(cmd.command(fix ? 'fix' : 'check').description(fix ? 'scan the database and repair what is wrong, in one transaction' : 'scan the database for broken invariants (changes nothing)')).action(async (opts: CommonOpts) => {
      const format = parseFormat(opts.output);
      const state = await withTransport(opts, (t) => integrity(t, fix));
      if (state.error) throw new CliError(`The integrity run failed: ${state.error}`);
      if (format !== 'table') return print(state, format);
      if (!state.results.length) {
        process.stdout.write('no problems found\n');
        return;
      }
      await print(state.results, 'table', { columns: ['description', 'fixed'], footer: `${state.results.length}${state.tooManyErrors ? '+' : ''} finding(s)` });
      if (!fix) {
        process.stdout.write('next: `ztc db snapshot`, then `ztc db fix` to repair them\n');
        process.exitCode = 3;
      }
    });
  }
  return cmd;
}
