// Commands run on the controller's host with --data-dir, beside the controller serving that data dir:
// they use its PKI as it is (never re-issuing the server certificate it serves for the command's own
// idea of the host names, nor re-signing the enrollment JWTs handed out), JWTs they make name the
// address the controller registered, and a data dir whose database is elsewhere (PostgreSQL) is never
// opened on a new, empty SQLite file.
import fs from 'node:fs';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { startController } from '../../src/server/controller.js';
import { cliRunner } from '../helpers/cli.js';
import { ADMIN, CLIENT, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const { ztc, cleanup } = cliRunner();
afterAll(() => cleanup());

describe('commands on the host beside a running controller', { timeout: 120_000 }, () => {
  it('leave its server certificate and outstanding JWTs alone, and sign with the address it registered', async () => {
    const dir = tempDataDir();
    const db = await testDatabase();
    const running = await startController(testConfig(dir, { port: 0, bind: '127.0.0.1', db, hostnames: ['ctrl.example.test'] }));
    try {
      const call = async (method: string, url: string, body?: unknown, token?: string) =>
        JSON.parse((await running.app.inject({ method: method as 'GET', url, headers: { ...(token ? { 'zt-session': token } : {}), 'content-type': 'application/json' }, payload: body ? JSON.stringify(body) : undefined })).body);
      const token = (await call('POST', `${CLIENT}/authenticate?method=password`, ADMIN)).data.token as string;
      const made = (await call('POST', `${MGMT}/identities`, { name: 'enrolls-later', type: 'Default', isAdmin: false, enrollment: { ott: true } }, token)).data.id as string;
      const jwtOf = async (id: string) => (await call('GET', `${MGMT}/identities/${id}`, undefined, token)).data.enrollment.ott.jwt as string;
      const outstanding = await jwtOf(made);
      const served = fs.readFileSync(path.join(dir, 'pki', 'server.pem'), 'utf8');

      // The CLI's own host names (this machine's) differ from the controller's: nothing is re-issued.
      const r = await ztc('identity', 'create', 'made-on-host', '-d', dir, ...(db ? ['--db', db] : []));
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr + r.stdout).not.toMatch(/re-issuing|re-signed/);
      expect(fs.readFileSync(path.join(dir, 'pki', 'server.pem'), 'utf8')).toBe(served);
      expect(await jwtOf(made)).toBe(outstanding);
      // Its JWT names the controller as the API's JWTs do, under the same key.
      const mine = (await call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "made-on-host"')}`, undefined, token)).data[0].id as string;
      const local = await jwtOf(mine);
      expect(decodeJwt(local).iss).toBe(decodeJwt(outstanding).iss);
      expect(decodeJwt(local).iss).toMatch(/^https:\/\/ctrl\.example\.test:/);
    } finally {
      await running.close();
    }
  });

  it('refuse a data dir whose controller keeps its data elsewhere, instead of making an empty SQLite database', async () => {
    const dir = tempDataDir();
    const running = await startController(testConfig(dir, { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
    await running.close();
    // On SQLite, as a PostgreSQL controller's data dir looks: its keys and id, no ztc.db.
    for (const f of ['ztc.db', 'ztc.db-wal', 'ztc.db-shm']) fs.rmSync(path.join(dir, f), { force: true });
    const r = await ztc('identity', 'list', '-d', dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/belongs to a controller \(its pki\/ and controller-id are there\) but holds no SQLite database \(ztc\.db\): its data is in PostgreSQL\. Pass that database: --db postgres:\/\/\.\.\. \(or ZTC_DB\)/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(fs.existsSync(path.join(dir, 'ztc.db'))).toBe(false);
    const reset = await ztc('admin', 'reset-password', '-d', dir, '--generate');
    expect(reset.code).toBe(1);
    expect(fs.existsSync(path.join(dir, 'ztc.db'))).toBe(false);
  });
});
