// CLI start-up: how long `ztc` takes to answer, as a ratio to starting node itself (`node -e 0`).
// Goals: version and --help within 2x, a remote `identity list` within 4x; a local one (on the data
// dir, no server) under 0.5 s. Also measured: that local list through the HTTP app, and with every core busy.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadConfig } from '../src/config.js';
import { startController } from '../src/server/controller.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(root, 'bin/ztc');
const RUNS = Number(process.env.BENCH_CLI_RUNS ?? 15);
// Asynchronous: the controller answering `identity list` runs in this process.
const run = promisify(execFile);

/** Median wall time of a command, in ms (runs one after another: start-up is what is measured). */
async function median(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS + 1; i++) {
    const t0 = process.hrtime.bigint();
    await run(process.execPath, args, { env });
    if (i > 0) times.push(Number(process.hrtime.bigint() - t0) / 1e6); // the first run warms the file cache
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

/** `fn` while one busy loop per core runs beside it (at the same priority). */
async function whileBusy<T>(fn: () => Promise<T>): Promise<T> {
  const loops = os.cpus().map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  try {
    return await fn();
  } finally {
    for (const l of loops) l.kill('SIGKILL');
  }
}

export async function measureCliStartup(): Promise<[string, string, string][]> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-bench-cli-'));
  const running = await startController(loadConfig({ dataDir: path.join(tmp, 'data'), port: '0', bind: '127.0.0.1', adminPassword: 'bench-password', hostnames: 'localhost', logLevel: 'silent' }, {}));
  try {
    const base = { ...process.env, ZTC_DATA_DIR: '', ZTC_DB: '' };
    const empty = { ...base, ZTC_HOME: path.join(tmp, 'nobody') };
    const loggedIn = { ...base, ZTC_HOME: path.join(tmp, 'home') };
    await run(process.execPath, [bin, 'login', running.url, '-u', 'admin', '-p', 'bench-password', '--yes'], { env: loggedIn });
    const node = await median(['-e', '0'], empty);
    const rows: [string, string, number, number][] = [
      ['node -e 0', `${node.toFixed(0)} ms`, 1, 0],
      ['ztc version (goal: 2x)', '', await median([bin, 'version'], empty), 2],
      ['ztc --help (goal: 2x)', '', await median([bin, '--help'], empty), 2],
      ['ztc identity list, remote (goal: 4x)', '', await median([bin, 'identity', 'list'], loggedIn), 4],
    ];
    const out: [string, string, string][] = rows.map(([label, , ms, goal], i) => {
      const ratio = i === 0 ? 1 : ms / node;
      return [`CLI start-up: ${label}`, `${(i === 0 ? node : ms).toFixed(0)} ms median of ${RUNS}`, `${ratio.toFixed(2)}${goal && ratio > goal ? '  (over the goal)' : ''}`];
    });
    // Local mode reads the store in the command's own process (cli/local-read.ts): an absolute goal,
    // beside the same list through the HTTP app (ZTC_LOCAL_APP=1: what every local read did before issue
    // 45), and with every core busy (a busy machine: the newcomer measured 2.5 s there).
    const localArgs = [bin, 'identity', 'list', '-d', running.ctx.config.dataDir];
    const local = await median(localArgs, empty);
    out.push(['CLI start-up: ztc identity list -d DIR, local (goal: 500 ms)', `${local.toFixed(0)} ms median of ${RUNS}`, `${(local / node).toFixed(2)}${local > 500 ? '  (over the goal)' : ''}`]);
    const throughApp = await median(localArgs, { ...empty, ZTC_LOCAL_APP: '1' });
    out.push(['CLI start-up: the same through the HTTP app (ZTC_LOCAL_APP=1, as before)', `${throughApp.toFixed(0)} ms median of ${RUNS}`, `${(throughApp / node).toFixed(2)}`]);
    const busy = await whileBusy(() => median(localArgs, empty));
    out.push([`CLI start-up: ztc identity list -d DIR, local, ${os.cpus().length} cores kept busy (no goal)`, `${busy.toFixed(0)} ms median of ${RUNS}`, `${(busy / node).toFixed(2)}`]);
    return out;
  } finally {
    await running.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
