// README and docs/ are tested: every shell example runs, in order (ORDER), in one bash session against a
// real listening controller whose admin password is the README's ('a-strong-password'). The only
// change made to the text is the port (README says 1280; the test listens where the OS lets it).
// `ztc` is the built bin/ztc, curl fails on an HTTP error (--fail-with-body), and the shell stops
// at the first failing command. Examples that cannot run here are listed in SKIP with the reason.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/registry.js';
import { startController, type Running } from '../../src/server/controller.js';
import { tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const repo = path.resolve('.');
const PASSWORD = 'a-strong-password';

/** Examples that cannot run in a test, each with why (and where else it is covered). */
const SKIP: [RegExp, string][] = [
  [/^npm install && npm (start|test|run package|run build)/, 'installs and builds the project (CI runs these)'],
  [/^(bin\/)?ztc serve /, 'a long-running server (test/cli/serve.test.ts starts one from flags)'],
  [/^(bin\/)?ztc quickstart/, 'a long-running server (test/cli/cli.test.ts runs quickstart)'],
  [/^python3 -m pip install openziti|^(bin\/)?ztc enroll \.ztc-data\/quickstart-|^python3 \.ztc-data\/echo-demo\.py/, 'the next steps quickstart prints (test/cli/cli.test.ts runs them from its output)'],
  [/^scp /, 'copies to another host'],
  // A follow in the foreground never ends; the operator's minute's runs in the background and is stopped.
  [/^ztc events --follow(?!.*&\s*(#.*)?$)/, 'follows the stream until stopped (test/cli/events.test.ts follows it and stops)'],
  [/^systemctl |^cd \/var\/lib\/ztc|^cp snapshots\/|^ztc db check -d \/var\/lib\/ztc/, 'a restore on a stopped production host (test/api/database.test.ts restores a snapshot)'],
];

interface Example {
  file: string;
  line: number;
  command: string;
}

/** The commands of every ```sh block, with continuation lines joined and comment-only lines dropped. */
export function examples(file: string): Example[] {
  const lines = fs.readFileSync(path.join(repo, file), 'utf8').split('\n');
  const out: Example[] = [];
  let inBlock = false;
  for (let i = 0; i < lines.length; i++) {
    if (/^```(sh|bash|shell)\s*$/.test(lines[i])) {
      inBlock = true;
      continue;
    }
    if (inBlock && lines[i].startsWith('```')) {
      inBlock = false;
      continue;
    }
    if (!inBlock || !lines[i].trim() || lines[i].trim().startsWith('#')) continue;
    const start = i;
    let command = lines[i];
    while (command.endsWith('\\') && i + 1 < lines.length) command += '\n' + lines[++i];
    out.push({ file, line: start + 1, command });
  }
  return out;
}

/**
 * The order the files run in: README first, then docs/ in the order a reader meets them; examples build on
 * earlier ones (the CLI's examples use the identity the curl example made), and the operations page resets
 * the admin's password, so it runs last. Every page of docs/ is listed (a test checks).
 */
const ORDER = ['README.md', 'docs/api.md', 'docs/cli.md', 'docs/routers.md', 'docs/configuration.md', 'docs/postgresql.md', 'docs/testing.md', 'docs/benchmarks.md', 'docs/architecture.md', 'docs/compatibility.md', 'docs/filters.md', 'docs/security.md', 'docs/operations.md'];
const files = ORDER.filter((f) => fs.existsSync(path.join(repo, f)));

describe('the shell examples of README.md and docs/', { timeout: 300_000 }, () => {
  let running: Running;
  let work: string;

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-readme-'));
    // The README's data dir is ./.ztc-data, seen from where the commands run.
    const dataDir = path.join(work, '.ztc-data');
    fs.renameSync(tempDataDir(), dataDir);
    running = await startController(testConfig(dataDir, { port: 0, bind: '127.0.0.1', adminPassword: PASSWORD, db: await testDatabase() }));
    const bin = path.join(work, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'ztc'), `#!/bin/sh\nexec "${process.execPath}" "${repo}/bin/ztc" "$@"\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(bin, 'curl'), `#!/bin/sh\nexec /usr/bin/curl --fail-with-body "$@"\n`, { mode: 0o755 });
  });
  afterAll(async () => {
    await running?.close();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('runs the examples of every page of docs/', () => {
    const pages = fs.readdirSync(path.join(repo, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
    expect(pages.filter((p) => !ORDER.includes(p))).toEqual([]);
    expect(files).toEqual(ORDER);
  });

  it('every skipped example is listed for a reason that still applies', () => {
    const all = files.flatMap(examples);
    for (const [rule] of SKIP) expect(all.some((e) => rule.test(e.command)), `no example matches ${rule}`).toBe(true);
  });

  it('runs every other example in order, each succeeding', async () => {
    const port = running.ctx.config.port;
    const run = files.flatMap(examples).filter((e) => !SKIP.some(([rule]) => rule.test(e.command)));
    expect(run.length).toBeGreaterThan(30);
    // Each command is announced on stderr, so a failure names its file and line.
    const script = ['set -eo pipefail', ...run.map((e) => `echo ">>> ${e.file}:${e.line}" >&2\n${e.command.replaceAll('localhost:1280', `localhost:${port}`)}`)].join('\n');
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('bash', ['-c', script], {
        cwd: work,
        // On PostgreSQL the host's commands (-d) name its database, as the operator of such a controller sets ZTC_DB.
        env: { ...process.env, PATH: `${path.join(work, 'bin')}:${process.env.PATH}`, ZTC_HOME: path.join(work, 'home'), ZTC_DATA_DIR: '', ZTC_DB: running.ctx.config.db ?? '', ZTC_PASSWORD: '' },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d));
      child.stderr.on('data', (d: Buffer) => (stderr += d));
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    });
    const last = [...result.stderr.matchAll(/^>>> (.+)$/gm)].pop()?.[1];
    const failed = run.find((e) => `${e.file}:${e.line}` === last);
    expect(result.code, `${last}: ${failed?.command}\n--- stderr\n${result.stderr.slice(-1500)}\n--- stdout\n${result.stdout.slice(-1500)}`).toBe(0);
    // What the examples promise, seen in their output.
    expect(result.stdout).toMatch(/"name":\s*"laptop-01"/);
    expect(result.stdout).toMatch(/logged in to https:\/\/localhost:\d+ as admin/);
    expect(result.stdout).toMatch(/enrolled: identity file written to laptop-03\.json/);
    expect(result.stdout).toMatch(/enrolled: identity file written to ana-laptop\.json/);
    expect(result.stdout).toMatch(/verified CA partner/);
    expect(JSON.parse(fs.readFileSync(path.join(work, 'laptop-03.json'), 'utf8')).id.cert).toMatch(/^pem:-----BEGIN CERTIFICATE-----/);
  });

  it("names only commands that exist in the CLI page's list of resources", () => {
    const page = fs.readFileSync(path.join(repo, 'docs/cli.md'), 'utf8');
    const list = /Resources: ([^.]+)\./s.exec(page)![1];
    const named = [...list.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(20);
    const real = new Set([...COMMANDS.map((c) => c.name), 'completion']);
    expect(named.filter((n) => !real.has(n))).toEqual([]);
  });
});
