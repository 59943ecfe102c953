// The admin console (ZAC) served from a directory at /zac/, as upstream controllers serve it with their
// "spa"/"zac" web binding (controller/webapis/spa.go: a file inside the directory is served; anything
// else, including a directory, gets index.html). The directory here is a small SPA made by the test.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/server/app.js';
import { expectError, startTestController, type TestController } from '../helpers/controller.js';

const INDEX = '<!doctype html><html><head><title>spa</title></head><body><app-root></app-root></body></html>\n';
const SECRET = 'TOP SECRET outside the console directory';

let c: TestController;
let off: TestController;
let top: string;
let site: string;

beforeAll(async () => {
  top = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-zac-'));
  site = path.join(top, 'site');
  fs.mkdirSync(path.join(site, 'assets', 'data'), { recursive: true });
  fs.writeFileSync(path.join(site, 'index.html'), INDEX);
  fs.writeFileSync(path.join(site, 'main.9874ecf8d877902a.js'), 'console.log("main");\n');
  fs.writeFileSync(path.join(site, 'styles.61ae1de74fe051ff.css'), 'body{}\n');
  fs.writeFileSync(path.join(site, 'assets', 'data', 'settings.json'), '{"edgeControllers":[]}\n');
  fs.writeFileSync(path.join(site, 'assets', 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>\n');
  fs.writeFileSync(path.join(site, 'assets', 'font.woff2'), Buffer.from([0x77, 0x4f, 0x46, 0x32]));
  fs.writeFileSync(path.join(site, 'favicon.ico'), Buffer.from([0, 0, 1, 0]));
  fs.writeFileSync(path.join(site, 'data.bin'), Buffer.from([1, 2, 3]));
  fs.writeFileSync(path.join(site, '.env'), SECRET);
  fs.writeFileSync(path.join(top, 'secret.txt'), SECRET);
  fs.mkdirSync(path.join(top, 'outside'));
  fs.writeFileSync(path.join(top, 'outside', 'secret.txt'), SECRET);
  fs.symlinkSync(path.join(top, 'secret.txt'), path.join(site, 'escape.txt'));
  fs.symlinkSync(path.join(top, 'outside'), path.join(site, 'outside-dir'));
  fs.symlinkSync(path.join(site, 'main.9874ecf8d877902a.js'), path.join(site, 'alias.js'));
  c = await startTestController({ config: { zacDir: site } });
  off = await startTestController();
});
afterAll(async () => {
  await c?.close();
  await off?.close();
  fs.rmSync(top, { recursive: true, force: true });
});

describe('ZAC at /zac/', () => {
  it('serves index.html at /zac/ without caching, and redirects /zac to /zac/ (relative URLs need the slash)', async () => {
    const r = await c.call('GET', '/zac/');
    expect(r.status).toBe(200);
    expect(r.text).toBe(INDEX);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.headers['cache-control']).toBe('no-cache');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    const bare = await c.call('GET', '/zac?x=1');
    expect(bare.status).toBe(301);
    expect(bare.headers.location).toBe('/zac/?x=1');
    expect((await c.call('GET', '/zac/index.html')).text).toBe(INDEX);
  });

  it('serves files with their content types; hashed names are cached for good, the rest revalidated', async () => {
    const cases: [string, string, string][] = [
      ['/zac/main.9874ecf8d877902a.js', 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable'],
      ['/zac/styles.61ae1de74fe051ff.css', 'text/css; charset=utf-8', 'public, max-age=31536000, immutable'],
      ['/zac/assets/data/settings.json', 'application/json; charset=utf-8', 'no-cache'],
      ['/zac/assets/logo.svg', 'image/svg+xml', 'no-cache'],
      ['/zac/assets/font.woff2', 'font/woff2', 'no-cache'],
      ['/zac/favicon.ico', 'image/x-icon', 'no-cache'],
      ['/zac/data.bin', 'application/octet-stream', 'no-cache'],
    ];
    for (const [url, type, cache] of cases) {
      const r = await c.call('GET', url);
      expect(r.status, url).toBe(200);
      expect(r.headers['content-type'], url).toBe(type);
      expect(r.headers['cache-control'], url).toBe(cache);
      expect(Number(r.headers['content-length']), url).toBe(fs.statSync(path.join(site, url.slice(5))).size);
    }
    expect((await c.call('GET', '/zac/main.9874ecf8d877902a.js')).text).toBe('console.log("main");\n');
    // A symlink that stays inside the directory is an ordinary file.
    expect((await c.call('GET', '/zac/alias.js')).text).toBe('console.log("main");\n');
  });

  it('answers app routes, dotted ones included, with index.html (as upstream\'s SPA handler does)', async () => {
    for (const url of ['/zac/login', '/zac/identities/abc123', '/zac/config-types/host.v1', '/zac/services/x.y.z?tab=1', '/zac/assets/missing.png']) {
      const r = await c.call('GET', url);
      expect(r.status, url).toBe(200);
      expect(r.text, url).toBe(INDEX);
      expect(r.headers['cache-control'], url).toBe('no-cache');
    }
  });

  it('lists no directory: a directory is answered with index.html', async () => {
    for (const url of ['/zac/assets', '/zac/assets/', '/zac/assets/data/']) {
      const r = await c.call('GET', url);
      expect(r.status, url).toBe(200);
      expect(r.text, url).toBe(INDEX);
    }
  });

  it('never serves anything outside the directory, nor hidden files in it (raw paths, over a socket)', async () => {
    // Over a real socket: an in-process request would have its dot-segments resolved before routing.
    await c.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = c.app.server.address() as AddressInfo;
    const raw = (p: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        }).on('error', reject);
      });
    const attempts = [
      '/zac/../secret.txt', '/zac/../../../../etc/passwd', '/zac/%2e%2e/secret.txt', '/zac/..%2fsecret.txt', '/zac/..%2Fsecret.txt',
      '/zac/..%5csecret.txt', '/zac/..\\secret.txt', '/zac/%2e%2e%2f%2e%2e%2fetc%2fpasswd', '/zac/assets/../../secret.txt',
      '/zac//etc/passwd', '/zac/%2fetc%2fpasswd', '/zac/./../secret.txt', '/zac/escape.txt', '/zac/outside-dir/secret.txt',
      '/zac/outside-dir', '/zac/.env', '/zac/%2eenv', '/zac/%E0%A4%A',
    ];
    for (const url of attempts) {
      const r = await raw(url);
      expect(r.text, url).not.toContain('TOP SECRET');
      expect(r.text, url).not.toContain('root:');
      // Either the app's page (upstream's fallback) or a refusal, never a file from elsewhere.
      if (r.status === 200) expect(r.text, url).toBe(INDEX);
      else expect(r.status, url).toBeGreaterThanOrEqual(400);
    }
    for (const url of ['/zac/%00', '/zac/index.html%00.js', '/zac/a%00/x']) expect((await raw(url)).status, url).toBe(400);
    // The same through the in-process path, which resolves dot-segments first.
    for (const url of ['/zac/../secret.txt', '/zac/escape.txt', '/zac/%2e%2e/secret.txt']) expect((await c.call('GET', url)).text, url).not.toContain('TOP SECRET');
  });

  it('answers HEAD without a body and If-None-Match with 304', async () => {
    const head = await c.call('HEAD', '/zac/main.9874ecf8d877902a.js');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers['content-type']).toBe('text/javascript; charset=utf-8');
    const first = await c.call('GET', '/zac/assets/logo.svg');
    const again = await c.call('GET', '/zac/assets/logo.svg', { headers: { 'if-none-match': String(first.headers.etag) } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect((await c.call('GET', '/zac/assets/logo.svg', { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
  });

  it('is public (the console logs in through the API), and refuses other methods', async () => {
    expect((await c.call('GET', '/zac/', { token: 'not-a-session' })).status).toBe(200);
    expectError(await c.call('POST', '/zac/login', { body: {} }), 405);
    expectError(await c.call('DELETE', '/zac/index.html'), 405);
  });

  it('is a 404 with the error envelope when no directory is configured', async () => {
    expectError(await off.call('GET', '/zac/'), 404, 'NOT_FOUND');
    expectError(await off.call('GET', '/zac/main.js'), 404, 'NOT_FOUND');
  });

  it('refuses to start on a directory that is missing or is not a console build', async () => {
    const ctx = { ...c.opened.ctx, config: { ...c.opened.ctx.config, zacDir: path.join(top, 'nope') } };
    await expect(buildApp(ctx)).rejects.toThrow(/does not exist/);
    await expect(buildApp({ ...ctx, config: { ...ctx.config, zacDir: path.join(top, 'outside') } })).rejects.toThrow(/no index.html/);
  });
});
