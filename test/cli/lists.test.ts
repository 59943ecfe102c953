// Lists for scripts and people: -o json|yaml returns every matching row (page after page) unless
// --limit/--offset ask for a window; the table shows a page and says how to see the rest.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const bin = path.resolve('bin/ztc');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-home-'));

function ztc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: '' }, timeout: 60_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('ztc list', { timeout: 120_000 }, () => {
  let running: Running;
  const COUNT = 520; // more than one 500-row page

  beforeAll(async () => {
    running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
    const login = await running.app.inject({ method: 'POST', url: `${MGMT}/authenticate?method=password`, payload: ADMIN });
    const token = JSON.parse(login.body).data.token as string;
    for (let i = 0; i < COUNT; i++) {
      const r = await running.app.inject({ method: 'POST', url: `${MGMT}/identities`, headers: { 'zt-session': token }, payload: { name: `host-${String(i).padStart(3, '0')}`, type: 'Device', isAdmin: false } });
      expect(r.statusCode).toBe(201);
    }
    expect((await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes')).code).toBe(0);
  });
  afterAll(async () => {
    await running.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('-o json and -o yaml return every matching row, across pages', async () => {
    const json = JSON.parse((await ztc('identity', 'list', 'name contains "host-"', '-o', 'json')).stdout) as { name: string }[];
    expect(json).toHaveLength(COUNT);
    expect(new Set(json.map((r) => r.name)).size).toBe(COUNT);
    const yaml = YAML.parse((await ztc('identity', 'list', '-o', 'yaml')).stdout) as unknown[];
    expect(yaml).toHaveLength(COUNT + 1);
  });

  it('--limit and --offset ask for a window', async () => {
    const json = JSON.parse((await ztc('identity', 'list', 'name contains "host-"', '--limit', '5', '--offset', '10', '-o', 'json')).stdout) as { name: string }[];
    expect(json.map((r) => r.name)).toHaveLength(5);
  });

  it('the table shows a page and says how to see the rest; --all shows everything', async () => {
    const table = await ztc('identity', 'list', 'name contains "host-"');
    expect(table.stdout.trim().split('\n')).toHaveLength(1 + 10 + 1);
    expect(table.stdout).toMatch(/^1-10 of 520: --limit 50, --offset 10 or --all for more$/m);
    const all = await ztc('identity', 'list', 'name contains "host-"', '--all');
    expect(all.stdout.trim().split('\n')).toHaveLength(1 + COUNT + 1);
    expect(all.stdout).toMatch(/^1-520 of 520$/m);
  });
});
