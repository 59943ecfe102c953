// OpenZiti's admin console (ZAC 4.5.2) logs in through the OIDC provider, in Debian's Chromium: with
// OIDC_AUTH and apiVersions['edge-oidc'] in /version it runs the authorization code flow with PKCE from
// the page (fetch authorize, login/username, the callback's redirect to ORIGIN/auth/callback, whose URL
// it reads for the code, then oauth/token) and sends the access token as a Bearer. It falls back to
// POST /authenticate silently when any step fails, so the test checks which way it went.
// The console is not part of the project: its build lives beside it (../shared/zac, or ZTC_TEST_ZAC_DIR);
// without one this file skips.
import { createHash, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const CHROMIUM = '/usr/bin/chromium';
const ZAC = process.env.ZTC_TEST_ZAC_DIR ?? path.resolve(import.meta.dirname, '../../../shared/zac');
const haveZac = fs.existsSync(path.join(ZAC, 'index.html'));

describe.skipIf(!haveZac)('ZAC 4.5.2 logs in through OIDC in a browser', () => {
  let running: Running;
  let browser: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`);
    const dataDir = tempDataDir();
    running = await startController(testConfig(dataDir, { port: 0, bind: '127.0.0.1', db: await testDatabase(), zacDir: ZAC }));
    // Trust the controller's server key (Chromium takes no CA file; its SPKI pin is the nearest thing),
    // and reach nothing but this machine (the console asks for web fonts and map tiles).
    const spki = createHash('sha256').update(new X509Certificate(fs.readFileSync(path.join(dataDir, 'pki', 'server.pem'))).publicKey.export({ type: 'spki', format: 'der' })).digest('base64');
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync',
        `--ignore-certificate-errors-spki-list=${spki}`, '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost'],
    });
    await browser.route('**/*', (r) => (new URL(r.request().url()).hostname === 'localhost' ? r.continue() : r.abort()));
  });
  afterAll(async () => {
    await browser?.close();
    await running?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  it('logs the admin in with the code flow, then lists identities with the access token', async () => {
    const origin = `https://localhost:${running.ctx.config.port}`;
    const page = await browser.newPage();
    const calls: string[] = [];
    const failed: string[] = [];
    const bearers: string[] = [];
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.origin === origin && !u.pathname.startsWith('/zac/')) calls.push(`${r.method()} ${u.pathname}`);
      const auth = r.headers().authorization;
      if (u.pathname.startsWith('/edge/management/') && auth) bearers.push(auth);
    });
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    page.on('pageerror', (e) => failed.push(`pageerror ${e.message}`));

    await page.goto(`${origin}/zac/`);
    await page.locator('#Username').waitFor({ timeout: 30_000 });
    await page.fill('#Username', ADMIN.username);
    await page.fill('#Password', ADMIN.password);
    await page.click('button.login-button');
    await page.waitForURL((u) => u.pathname === '/zac/dashboard', { timeout: 30_000 });
    await page.goto(`${origin}/zac/identities`);
    await page.getByText('Default Admin').first().waitFor({ timeout: 30_000 });

    // The OIDC flow, and not the legacy login it falls back to.
    for (const step of ['GET /oidc/authorize', 'POST /oidc/login/username', 'GET /oidc/authorize/callback', 'POST /oidc/oauth/token']) expect(calls, step).toContain(step);
    expect(calls.filter((c) => c.includes('/authenticate'))).toEqual([]);
    expect(bearers.length).toBeGreaterThan(0);
    expect(bearers.every((b) => /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/.test(b))).toBe(true);
    // Only what upstream answers the same way: the callback at the console's own origin (it reads
    // the code from the URL), the cluster reads and the dashboard's non-boolean filter (docs/api.md).
    const expected = ['404 /auth/callback', '404 /fabric/v1/cluster/list-members', '404 /fabric/v1/raft/members', '400 /edge/management/v1//terminators'];
    expect(failed.filter((f) => !expected.includes(f))).toEqual([]);
  });
});
