// The built CLI's `ztc pki status` and `ztc status`, on a local data dir.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const bin = path.resolve('bin/ztc');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-home-'));
let localDb = '';

function ztc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: localDb }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('ztc pki status and ztc status', { timeout: 120_000 }, () => {
  const dir = tempDataDir();
  beforeAll(async () => {
    localDb = await testDatabase();
    expect((await ztc('edge-router', 'create', 'er-1', '-d', dir)).code).toBe(0);
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('lists every certificate with days left, as a table and as JSON', async () => {
    const t = await ztc('pki', 'status', '-d', dir);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/^KIND\s+NAME\s+NOT AFTER\s+DAYS LEFT\s+FINGERPRINT/m);
    expect(t.stdout).toMatch(/^root\s+root CA\s+\S+\s+\d+\s+[0-9a-f]{40}$/m);
    expect(t.stdout).toMatch(/^server\s+server\s+\S+\s+36\d\s+/m);
    expect(t.stdout).toMatch(/^signer\s+enrollment signer\s+-\s+no expiry/m);
    const j = await ztc('pki', 'status', '-d', dir, '-o', 'json', '--expiring', '400');
    const body = JSON.parse(j.stdout);
    expect(body.certificates.map((c: { kind: string }) => c.kind)).toEqual(['server']);
    expect(body.warnings).toEqual([]);
    const bad = await ztc('pki', 'status', '-d', dir, '--expiring', 'soon');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--expiring/);
  });

  it('shows the controller\'s version and the health of its certificates', async () => {
    const s = await ztc('status', '-d', dir);
    expect(s.code).toBe(0);
    expect(s.stdout).toMatch(/^controller\s+v\d/m);
    expect(s.stdout).toMatch(/^intermediate\s+\d+ days left/m);
    expect(s.stdout).toMatch(/^health\s+ok$/m);
    const j = JSON.parse((await ztc('status', '-d', dir, '-o', 'json')).stdout);
    expect(j).toMatchObject({ warnings: [] });
    expect(Object.keys(j.certificates)).toEqual(['root', 'intermediate', 'server']);
  });
});
