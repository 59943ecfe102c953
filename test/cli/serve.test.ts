// `bin/ztc serve` exactly as automation runs it: ready on /version, clean exit on SIGTERM.
import { spawn } from 'node:child_process';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

const get = (url: string) =>
  new Promise<number>((resolve) => {
    https.get(url, { rejectUnauthorized: false, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', () => resolve(0));
  });

describe('bin/ztc serve', () => {
  it('starts from flags, answers /version when ready, and stops cleanly on SIGTERM', async () => {
    const dir = tempDataDir();
    const port = await freePort();
    const db = await testDatabase();
    const child = spawn(process.execPath, [path.resolve('bin/ztc'), 'serve', '--data-dir', dir, '--port', String(port), '--admin-password', 'serve-pass-1', '--log-level', 'warn', ...(db ? ['--db', db] : [])], {
      env: { ...process.env, ZTC_DATA_DIR: '' },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await get(`https://127.0.0.1:${port}/version`);
    }
    expect(status).toBe(200);
    expect(out).toMatch(new RegExp(`listening\\s+https://0\\.0\\.0\\.0:${port}`));
    expect(out).toMatch(/admin\s+admin \(password as given\)/);
    expect(out).not.toContain('serve-pass-1');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await get(`https://127.0.0.1:${port}/version`)).toBe(0);
  });

  it('takes the admin password from a file, so it never shows in the process list', async () => {
    const dir = tempDataDir();
    const port = await freePort();
    const db = await testDatabase();
    const secret = 'from-a-file-7';
    fs.writeFileSync(`${dir}/admin-password`, `${secret}\n`, { mode: 0o600 });
    const child = spawn(process.execPath, [path.resolve('bin/ztc'), 'serve', '--data-dir', dir, '--port', String(port), '--admin-password-file', `${dir}/admin-password`, '--log-level', 'warn', ...(db ? ['--db', db] : [])], {
      env: { ...process.env, ZTC_DATA_DIR: '', ZTC_ADMIN_PASSWORD: '' },
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await get(`https://127.0.0.1:${port}/version`);
    }
    expect(status).toBe(200);
    if (fs.existsSync(`/proc/${child.pid}/cmdline`)) expect(fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')).not.toContain(secret);
    const login = (password: string) =>
      new Promise<number>((resolve) => {
        const req = https.request(`https://127.0.0.1:${port}/edge/client/v1/authenticate?method=password`, { method: 'POST', rejectUnauthorized: false, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', () => resolve(0));
        req.end(JSON.stringify({ username: 'admin', password }));
      });
    expect(await login(secret)).toBe(200);
    expect(await login(`${secret}\n`)).toBe(401);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
