// `bin/ztc serve --zac-dir DIR` (and ZTC_CORS_ORIGINS) as an operator runs it: the banner says where the
// console is, and the console and CORS answer over the real TLS socket.
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDataDir, testDatabase } from '../helpers/controller.js';
import { killLeftovers, serveOnFreePorts } from '../helpers/cli.js';

// A failing test must not leave the processes it started running.
afterAll(killLeftovers);

const request = (url: string, o: { method?: string; headers?: Record<string, string> } = {}) =>
  new Promise<{ status: number; text: string; headers: Record<string, unknown> }>((resolve) => {
    const req = https.request(url, { method: o.method ?? 'GET', headers: o.headers, rejectUnauthorized: false, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', () => resolve({ status: 0, text: '', headers: {} }));
    req.end();
  });

describe('bin/ztc serve with the console and CORS', { timeout: 90_000 }, () => {
  it('prints the console URL, serves it, and answers preflights from the listed origin', async () => {
    const dir = tempDataDir();
    const site = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-console-'));
    fs.writeFileSync(path.join(site, 'index.html'), '<html>console</html>');
    const db = await testDatabase();
    const served = await serveOnFreePorts(1, ([port]) => ['--data-dir', dir, '--port', String(port), '--admin-password', 'serve-pass-1', '--log-level', 'warn', '--zac-dir', site, ...(db ? ['--db', db] : [])], { ...process.env, ZTC_DATA_DIR: '', ZTC_CORS_ORIGINS: 'https://console.example' });
    const { child } = served;
    const [port] = served.ports;
    const exited = new Promise<string>((resolve) => (child.exitCode !== null ? resolve(`code ${child.exitCode}`) : child.on('exit', (code, signal) => resolve(`code ${code} signal ${signal}`))));
    try {
      const out = served.output();
      expect(out, out).toMatch(/^log in with:/m);
      expect(out).toMatch(new RegExp(`console\\s+https://localhost:${port}/zac/`));
      expect(out).toMatch(/CORS origins\s+https:\/\/console\.example/);
      const page = await request(`https://127.0.0.1:${port}/zac/identities`);
      expect(page.status).toBe(200);
      expect(page.text).toBe('<html>console</html>');
      const pre = await request(`https://127.0.0.1:${port}/edge/management/v1/identities`, { method: 'OPTIONS', headers: { origin: 'https://console.example', 'access-control-request-method': 'GET' } });
      expect(pre.status).toBe(204);
      expect(pre.headers['access-control-allow-origin']).toBe('https://console.example');
    } finally {
      child.kill('SIGTERM');
      expect(await exited, served.output()).toBe('code 0 signal null');
      fs.rmSync(site, { recursive: true, force: true });
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
