// Mistakes a newcomer makes are caught early, with a message that says what to do.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const bin = path.resolve('bin/ztc');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-home-'));

function ztc(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: '', ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('mistakes caught early', { timeout: 120_000 }, () => {
  afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

  it('an unknown command prints the error and a suggestion, not the whole help', async () => {
    const r = await ztc({}, 'idenity', 'list');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error: unknown command 'idenity'\n(Did you mean identity?)\n");
    expect(r.stdout).toBe('');
  });

  it('required flags are marked in --help and checked before anything is sent', async () => {
    const help = await ztc({}, 'authenticator', 'create', '--help');
    expect(help.stdout).toMatch(/--identity-id <value>\s+\(required\) the id or name of the identity/);
    expect(help.stdout).toMatch(/--method <value>\s+\(required\)/);
    expect(help.stdout).not.toMatch(/--username <value>\s+\(required\)/);
    // Not logged in either: the missing flag is what is reported.
    const r = await ztc({}, 'authenticator', 'create', '--method', 'updb');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/required option '--identity-id <value>' not specified/);
  });

  it('identity create says which values it chose, and --identity-id takes a name', async () => {
    const dir = tempDataDir();
    const db = await testDatabase();
    try {
      const made = await ztc({ ZTC_DB: db }, 'identity', 'create', 'printer-01', '-d', dir);
      expect(made.code).toBe(0);
      expect(made.stdout).toMatch(/^created identity \S+ \(not given, so: --type Default, --is-admin false\)$/m);
      const typed = await ztc({ ZTC_DB: db }, 'identity', 'create', 'printer-02', '--type', 'Device', '-d', dir);
      expect(typed.stdout).toMatch(/\(not given, so: --is-admin false\)/);
      const auth = await ztc({ ZTC_DB: db }, 'authenticator', 'create', '--identity-id', 'printer-01', '--method', 'updb', '--username', 'printer.one', '--password', 'printer-pass-1', '-d', dir);
      expect(auth.stderr).not.toMatch(/error/);
      expect(auth.code).toBe(0);
      const none = await ztc({ ZTC_DB: db }, 'authenticator', 'create', '--identity-id', 'no-such-printer', '--method', 'updb', '--username', 'nobody', '--password', 'printer-pass-1', '-d', dir);
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/--identity-id: no identity has the id or name 'no-such-printer'/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
