// What an operator runs: `ztc serve --metrics-port` scraped over plain HTTP, the health checks a
// probe calls, and (below) API tokens made and used through the built CLI.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliRunner, loggedInController, killLeftovers, serveOnFreePorts } from '../helpers/cli.js';
import { tempDataDir, testDatabase } from '../helpers/controller.js';
import { parseExposition, sampleValue } from '../helpers/prometheus.js';

// A failing test must not leave the processes it started running.
afterAll(killLeftovers);

function get(url: string): Promise<{ status: number; text: string }> {
  const lib = url.startsWith('https:') ? https : http;
  return new Promise((resolve) => {
    lib.get(url, { rejectUnauthorized: false, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    }).on('error', () => resolve({ status: 0, text: '' }));
  });
}

describe('ztc serve --metrics-port', () => {
  it('serves metrics and health checks over plain HTTP for Prometheus and probes', async () => {
    const db = await testDatabase();
    const served = await serveOnFreePorts(2, ([port, metricsPort]) => ['--port', String(port), '--bind', '127.0.0.1', '--metrics-port', String(metricsPort), '--data-dir', tempDataDir(), ...(db ? ['--db', db] : [])], { ...process.env, ZTC_DATA_DIR: '', ZTC_LOG_FORMAT: 'json' });
    const { child } = served;
    const [port, metricsPort] = served.ports;
    expect(served.stdout(), served.output()).toMatch(/^log in with:/m);
    expect(served.stdout()).toContain(`  metrics       http://127.0.0.1:${metricsPort}/metrics`);
    const ready = JSON.parse((await get(`https://127.0.0.1:${port}/health-checks`)).text);
    expect(ready.data.healthy).toBe(true);
    expect((await get(`http://127.0.0.1:${metricsPort}/health-checks/live`)).status).toBe(200);
    const scrape = await get(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scrape.status).toBe(200);
    const fams = await parseExposition(scrape.text);
    expect(sampleValue(fams, 'ztc_http_requests_total', { method: 'GET', route: '/health-checks', status: '200' })).toBeGreaterThanOrEqual(1);
    // The API port keeps /metrics for administrators.
    expect((await get(`https://127.0.0.1:${port}/metrics`)).status).toBe(401);
    child.kill('SIGTERM');
  });
});

describe('ztc token', () => {
  it('creates a token shown once, logs in with it from a file, lists it with its last use, and revokes it by name', async () => {
    const { ztc, cleanup } = cliRunner();
    const running = await loggedInController(ztc);
    try {
      const made = await ztc('token', 'create', 'ci-job', '--expires-in-days', '7');
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toMatch(/created API token 'ci-job' \(admin, expires .+\); shown only this once:\nztt_\S+\n$/);
      const token = made.stdout.trim().split('\n').at(-1)!;
      const ro = await ztc('token', 'create', 'viewer', '--read-only', '-o', 'json');
      expect(JSON.parse(ro.stdout)).toMatchObject({ name: 'viewer', readOnly: true });

      // A second home, as a CI runner would have: it logs in with the token file only.
      const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-token-')), 'token');
      fs.writeFileSync(file, `${token}\n`, { mode: 0o600 });
      const ci = cliRunner();
      const login = await ci.ztc('login', running.url, '--token-file', file, '--yes');
      expect(login.code, login.stderr).toBe(0);
      expect(login.stdout).toContain('using an API token for Default Admin');
      expect(fs.readFileSync(path.join(ci.home, 'profiles.json'), 'utf8')).toContain(token);
      const svc = await ci.ztc('service', 'create', 'made-by-ci', '--encryption-required');
      expect(svc.code, svc.stderr).toBe(0);

      const list = await ztc('token', 'list', '-o', 'json');
      const rows = JSON.parse(list.stdout) as { name: string; lastUsedAt: string | null }[];
      expect(rows.map((r) => r.name).sort()).toEqual(['ci-job', 'viewer']);
      expect(rows.find((r) => r.name === 'ci-job')!.lastUsedAt).toBeTruthy();
      expect(list.stdout).not.toContain(token);

      const revoked = await ztc('token', 'revoke', 'ci-job');
      expect(revoked.code, revoked.stderr).toBe(0);
      const after = await ci.ztc('service', 'list');
      expect(after.code).not.toBe(0);
      // What to do says to replace the token, not to log in again with the same file (which fails).
      expect(after.stderr).toMatch(/not known to this controller: it was revoked/);
      expect(after.stderr).toMatch(/the API token of profile 'default' no longer works: an admin creates another \(ztc token create NAME\), then log in with it: ztc login URL --token-file FILE --profile default/);
      expect(after.stderr).not.toMatch(/session expired/);
      const listed = JSON.parse((await ci.ztc('profile', 'list', '--check', '-o', 'json')).stdout) as { status: string }[];
      expect(listed[0].status).toMatch(/^API token refused \(revoked or expired\): ztc token create NAME/);
      const again = await ci.ztc('login', running.url, '--token-file', file);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/refused the API token in .*token: The API token is not known .*Put a new one there \(an admin runs ztc token create NAME\)/);
      ci.cleanup();
    } finally {
      await running.close();
      cleanup();
    }
  }, 120_000);
});
