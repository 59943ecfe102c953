// The API reference page, rendered as a person sees it: Debian's Chromium (headless) loads /docs
// from a listening controller and both OpenAPI documents must show their operations.
// One browser for the whole file keeps it fast.
import fs from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('/docs in a browser', { timeout: 90_000 }, () => {
  let running: Running;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`);
    running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    // The controller's CA is not in the browser's store; the page's content is what is under test here.
    page = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await running?.close();
  });

  // Swagger UI renders long lists virtually (only what is on screen): scroll through, collecting paths.
  const operations = async () => {
    const seen = new Set<string>();
    await page.evaluate(() => window.scrollTo(0, 0));
    for (let step = 0; step < 500; step++) {
      for (const p of await page.locator('.opblock-summary-path').allInnerTexts()) seen.add(p.replace(/\u200b/g, ''));
      const atEnd = await page.evaluate(() => {
        const before = window.scrollY;
        window.scrollBy(0, window.innerHeight);
        return window.scrollY === before;
      });
      if (atEnd) break;
      await page.waitForTimeout(30);
    }
    return [...seen];
  };

  it('lists the operations of the management API, then of the client API after switching', async () => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`https://127.0.0.1:${running.ctx.config.port}/docs`);
    await page.locator('.opblock-summary-path').first().waitFor({ timeout: 30_000 });
    expect(await page.content()).not.toContain('No API definition provided');

    const select = page.locator('.topbar select');
    const options = await select.locator('option').allInnerTexts();
    // Both Edge APIs, and the fabric lists newer clients read (routes/fabric.ts).
    expect(options).toHaveLength(3);
    expect(options.join(' | ')).toMatch(/Fabric/);
    expect(options.join(' | ')).toMatch(/Management/);
    expect(options.join(' | ')).toMatch(/Client/);

    // Selecting a document loads it: its title shows, then its operations.
    const pick = async (label: RegExp) => {
      const value = await select.locator('option', { hasText: label }).getAttribute('value');
      await select.selectOption(value!);
      await page.waitForFunction((title) => !!document.querySelector('.info .title')?.textContent?.includes(title), label.source, { timeout: 30_000 });
      await page.locator('.opblock-summary-path').first().waitFor();
      return operations();
    };
    const management = await pick(/Edge Management/);
    expect(management).toContain('/edge/management/v1/identities');
    expect(management).toContain('/edge/management/v1/service-policies');
    expect(management.every((p) => p.startsWith('/edge/management/v1'))).toBe(true);
    const client = await pick(/Edge Client/);
    expect(client).toContain('/edge/client/v1/current-identity');
    expect(client).toContain('/edge/client/v1/enroll/ott');
    expect(client.some((p) => p.startsWith('/edge/management/'))).toBe(false);
    expect(errors).toEqual([]);
  });
});
