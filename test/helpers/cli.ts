// The built program as a user runs it: bin/ztc in a fresh process, with its own home (profiles) and,
// in local mode, the test's database (SQLite in the data dir, or a fresh PostgreSQL one).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, tempDataDir, testConfig, testDatabase } from './controller.js';

export const bin = path.resolve('bin/ztc');

/** Processes the tests started (serve, quickstart, a follower): ended at the end of their file, so a failing test leaves none running. */
const children = new Set<ChildProcess>();
export function tracked<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}
/** For each such file's afterAll. */
export function killLeftovers() {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
}

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
      execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: state.localDb }, timeout: 120_000 }, (err, stdout, stderr) => {
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

/**
 * A controller on a local port with the runner's CLI logged in to it: remote mode, where a command
 * costs a fraction of local mode's start-up (which opens the store and builds the app each time).
 */
export async function loggedInController(ztc: (...args: string[]) => Promise<CliRun>): Promise<Running> {
  const running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
  const login = await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes');
  if (login.code !== 0) throw new Error(`ztc login failed: ${login.stderr}`);
  return running;
}

/**
 * Poll `status` (a GET's HTTP status, 0 when refused) until it is 200, the server's process has
 * ended, or `ms` have passed; the last status. A deadline in time, not in tries: a loaded machine
 * (the suite runs files side by side, with other work beside it) can take well over 10 s to start a controller.
 */
export async function untilAnswering(status: () => Promise<number>, ended: () => boolean, ms = 90_000): Promise<number> {
  const deadline = Date.now() + ms;
  let last = 0;
  while (!ended() && Date.now() < deadline && (last = await status()) !== 200) await new Promise((r) => setTimeout(r, 100));
  return last;
}

/**
 * Wait until a process's output so far (`output()`) matches `pattern`, the process has ended, or `ms`
 * have passed. serve's banner comes once every listener is up, which can be a moment after the API
 * answers: a test that saw /version answer waits for the banner with this.
 */
export async function untilPrinted(output: () => string, pattern: RegExp, ended: () => boolean, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(output()) && !ended() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** A port free at the moment of asking (the caller's child process listens on it a moment later). */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = (s.address() as net.AddressInfo);
      s.close(() => resolve(port));
    });
  });

export interface ServeChild {
  child: ChildProcess;
  ports: number[];
  /** stdout and stderr so far, as one text (and stdout alone). */
  output(): string;
  stdout(): string;
}

/**
 * `ztc serve` as a child on `count` ports picked free (`args` builds its arguments from them), once
 * its banner is out. A port picked free can be taken by another test's listener before the child
 * binds it (files run side by side, each starting controllers on port 0): ztc then says the port is
 * in use and ends, as a user would see it; the helper starts again on other ports, up to 3 times.
 */
export async function serveOnFreePorts(count: number, args: (ports: number[]) => string[], env: NodeJS.ProcessEnv): Promise<ServeChild> {
  for (let tries = 1; ; tries++) {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) ports.push(await freePort());
    const child = tracked(spawn(process.execPath, [bin, 'serve', ...args(ports)], { env }));
    let out = '';
    let stdout = '';
    child.stdout!.on('data', (d) => ((out += d), (stdout += d)));
    child.stderr!.on('data', (d) => (out += d));
    const ended = () => child.exitCode !== null || child.signalCode !== null;
    await untilPrinted(() => stdout, /^log in with:/m, ended);
    if (ended()) await new Promise((r) => (child.stderr!.readableEnded ? r(undefined) : child.stderr!.once('end', r)));
    if (tries < 3 && ended() && /already in use|was in use when the controller started/.test(out)) continue;
    return { child, ports, output: () => out, stdout: () => stdout };
  }
}
