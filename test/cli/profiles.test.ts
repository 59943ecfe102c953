// Profiles: a second login does not take over the current profile unless asked, names are checked,
// and an expired session says how to log in again.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const bin = path.resolve('bin/ztc');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-home-'));

function ztc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: '' }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('ztc profile', { timeout: 120_000 }, () => {
  let running: Running;
  beforeAll(async () => {
    running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
  });
  afterAll(async () => {
    await running.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('keeps the current profile on a second login, switches when asked, and lists, deletes and checks names', async () => {
    const first = await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes', '--profile', 'one');
    expect(first.stdout).toMatch(/^current profile: one$/m);
    const second = await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes', '--profile', 'two');
    expect(second.stdout).toMatch(/current profile is still 'one': ztc profile use two/);
    expect((await ztc('profile', 'current')).stdout).toMatch(/^one\s+https:/);
    const list = await ztc('profile', 'list');
    expect(list.stdout).toMatch(/^\*\s+one\s+https:\S+\s+admin\s+true$/m);
    expect(list.stdout).toMatch(/^\s+two\s+https:/m);
    expect((await ztc('profile', 'use', 'two')).stdout).toBe('current profile: two\n');
    expect((await ztc('profile', 'current')).stdout).toMatch(/^two\s/);
    const nope = await ztc('identity', 'list', '--profile', 'nope');
    expect(nope.code).toBe(1);
    expect(nope.stderr).toMatch(/No profile named 'nope': the profiles are one, two/);
    expect((await ztc('profile', 'use', 'nope')).stderr).toMatch(/No profile named 'nope'/);
    expect((await ztc('profile', 'delete', 'one')).code).toBe(0);
    expect((await ztc('profile', 'list')).stdout).not.toMatch(/\bone\b/);
  });

  it('an ended session says how to log in again', async () => {
    await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes', '--profile', 'ends', '--use');
    const token = JSON.parse(fs.readFileSync(path.join(home, 'profiles.json'), 'utf8')).profiles.ends.token as string;
    await running.app.inject({ method: 'DELETE', url: `${MGMT}/current-api-session`, headers: { 'zt-session': token } });
    const r = await ztc('identity', 'list');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`session expired or ended, log in again: ztc login ${running.url.replace(/[.]/g, '\\.')} -u admin`));
    // The list says a token is saved; --check asks the controller whether it still works.
    await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--profile', 'lives');
    const checked = JSON.parse((await ztc('profile', 'list', '--check', '-o', 'json')).stdout) as { name: string; loggedIn: boolean; status: string }[];
    expect(checked.find((p) => p.name === 'ends')).toMatchObject({ loggedIn: true, status: expect.stringMatching(/^session ended: ztc login https:\S+ -u admin --profile ends$/) });
    expect(checked.find((p) => p.name === 'lives')).toMatchObject({ loggedIn: true, status: 'works' });
    const table = await ztc('profile', 'list', '--check');
    expect(table.stdout).toMatch(/^CURRENT\s+NAME\s+URL\s+USERNAME\s+LOGGED IN\s+STATUS/m);
    // Said whole: what to type is the point of it.
    expect(table.stdout).toMatch(/ session ended: ztc login https:\S+ -u admin --profile ends$/m);
  });
});
