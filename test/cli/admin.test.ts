// Recovering admin access on the host: `ztc admin reset-password|create -d DATA_DIR` while the
// controller is running, and management commands refusing a data dir with no controller in it.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const bin = path.resolve('bin/ztc');
let db = '';

function ztc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: os.tmpdir(), ZTC_DATA_DIR: '', ZTC_DB: db }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe('ztc admin', { timeout: 120_000 }, () => {
  let running: Running;
  let dir: string;
  const login = async (username: string, password: string) =>
    (await running.app.inject({ method: 'POST', url: `${MGMT}/authenticate?method=password`, payload: { username, password } })).statusCode;

  beforeAll(async () => {
    dir = tempDataDir();
    db = await testDatabase();
    running = await startController(testConfig(dir, { port: 0, bind: '127.0.0.1', db }));
  });
  afterAll(async () => {
    await running.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('resets the default admin password while the server runs, printing a generated one once', async () => {
    expect(await login(ADMIN.username, ADMIN.password)).toBe(200);
    const r = await ztc('admin', 'reset-password', '-d', dir, '--generate');
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/reset the password of 'admin' .*lockouts cleared, MFA removed; the API sessions it had logged in with were ended: log in again \(ztc login https:\/\/\S+ -u admin\)/);
    // The address the running controller registered, not the config's default port.
    expect(r.stdout).toContain(`:${new URL(running.url).port} -u admin)`);
    const password = /password of 'admin': (\S+) {3}\(generated; shown only this once\)/.exec(r.stdout)![1];
    expect(await login(ADMIN.username, ADMIN.password)).toBe(401);
    expect(await login(ADMIN.username, password)).toBe(200);
  });

  it('creates another admin that can log in, and resets its password by username', async () => {
    const made = await ztc('admin', 'create', 'ops-admin', '-d', dir, '--generate');
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(new RegExp(`log in with: ztc login https://\\S+:${new URL(running.url).port} -u ops-admin`));
    const first = /password of 'ops-admin': (\S+)/.exec(made.stdout)![1];
    expect(await login('ops-admin', first)).toBe(200);
    const reset = await ztc('admin', 'reset-password', 'ops-admin', '-d', dir, '--generate');
    expect(reset.code).toBe(0);
    const second = /password of 'ops-admin': (\S+)/.exec(reset.stdout)![1];
    expect(await login('ops-admin', first)).toBe(401);
    expect(await login('ops-admin', second)).toBe(200);

    // Every recovery is on record in the data dir, without the password.
    const log = path.join(dir, 'audit.log');
    expect(fs.statSync(log).mode & 0o777).toBe(0o600);
    const events = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(events.map((e) => `${e.event} ${e.username}`)).toEqual(['admin.password-reset admin', 'admin.created ops-admin', 'admin.password-reset ops-admin']);
    expect(events[1]).toMatchObject({ identity: 'ops-admin', host: os.hostname(), time: expect.stringMatching(/^\d{4}-/) });
    const text = fs.readFileSync(log, 'utf8');
    expect(text).not.toContain(first);
    expect(text).not.toContain(second);

    // ... and in the stored audit the server shares: the recovery, and its changes made as the local admin.
    // In the order they were made: PostgreSQL returns rows in no particular order without one (seen in CI).
    const stored = await running.ctx.store.db.selectFrom('auditEvents').selectAll().orderBy('at').execute();
    expect(stored.filter((r) => r.namespace === 'admin').map((r) => `${r.eventType} ${r.entityName}`)).toEqual(['password-reset Default Admin', 'created ops-admin', 'password-reset ops-admin']);
    const local = stored.map((r) => JSON.parse(r.body)).find((e) => e.entityType === 'authenticators' && e.eventType === 'updated');
    expect(local.metadata.source).toMatchObject({ type: 'local', host: os.hostname() });
    const all = JSON.stringify(stored);
    expect(all).not.toContain(first);
    expect(all).not.toContain(second);
  });

  it('refuses an unknown username and a data dir without a controller', async () => {
    const unknown = await ztc('admin', 'reset-password', 'nobody-here', '-d', dir, '--generate');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No password login is named 'nobody-here'/);
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-empty-'));
    const typo = path.join(empty, 'nothing');
    for (const args of [['admin', 'reset-password', '-d', typo], ['identity', 'list', '-d', typo]]) {
      const r = await ztc(...args);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/holds no controller \(no pki\/ in it\).*ztc serve -d/);
      expect(fs.existsSync(typo)).toBe(false);
    }
  });
});
