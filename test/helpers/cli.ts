// The built program as a user runs it: bin/ztc in a fresh process, with its own home (profiles) and,
// in local mode, the test's database (SQLite in the data dir, or a fresh PostgreSQL one).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const bin = path.resolve('bin/ztc');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export function cliRunner() {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-home-'));
  const state = { localDb: '' };
  const ztc = (...args: string[]): Promise<CliRun> =>
    new Promise((resolve) => {
      execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: state.localDb }, timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
  return {
    home,
    ztc,
    /** The database local-mode commands open (ZTC_DB). */
    useDb: (url: string) => {
      state.localDb = url;
    },
    cleanup: () => fs.rmSync(home, { recursive: true, force: true }),
  };
}
