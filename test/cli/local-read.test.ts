// The CLI's local reads without the HTTP app (src/cli/local-read.ts) answer exactly what the app answers:
// for every resource the management API mounts, its list (plain, paged, filtered) and a row by id, the
// same JSON, key for key and in the same order; a missing id the same 404; and anything it does not take
// (another query parameter, a bad filter, another path) is left to the app. Then the built CLI's local
// list and get, with the app path forced off and on, print the same.
import { execFile } from 'node:child_process';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openReader, type Reader } from '../../src/cli/local-read.js';
import { managementResources } from '../../src/server/management-resources.js';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, CLIENT, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';
import { bin } from '../helpers/cli.js';

let running: Running;
let reader: Reader | undefined;
let token: string;
let pg = false;

const call = async (method: string, url: string, body?: unknown) => {
  const res = await running.app.inject({ method: method as 'GET', url, headers: { 'zt-session': token, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { payload: JSON.stringify(body) } : {}) });
  return { status: res.statusCode, text: res.body, json: JSON.parse(res.body) as { data: any; meta: any; error?: any } };
};

beforeAll(async () => {
  const db = await testDatabase();
  pg = !!db;
  running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db }));
  const login = await running.app.inject({ method: 'POST', url: `${CLIENT}/authenticate?method=password`, payload: ADMIN });
  token = JSON.parse(login.body).data.token;
  // Something of most kinds, with references between them.
  const made = async (p: string, body: unknown) => {
    const r = await call('POST', `${MGMT}${p}`, body);
    expect(r.status, r.text).toBeLessThan(300);
    return r.json.data?.id as string;
  };
  const laptop = await made('/identities', { name: 'laptop-01', type: 'Default', isAdmin: false, roleAttributes: ['staff'], enrollment: { ott: true } });
  await made('/identities', { name: 'laptop-02', type: 'User', isAdmin: false, roleAttributes: ['staff', 'eu'], tags: { owner: 'ana' } });
  await made('/authenticators', { identityId: laptop, method: 'updb', username: 'laptop-user', password: 'laptop-pass-1' });
  await made('/configs', { name: 'web-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['web.internal'], portRanges: [{ low: 443, high: 443 }] } });
  await made('/edge-routers', { name: 'er-1', roleAttributes: ['public'], isTunnelerEnabled: false });
  await made('/routers', { name: 'tr-1' });
  await made('/service-policies', { name: 'staff-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff', `@${laptop}`], serviceRoles: ['#web'] });
  await made('/edge-router-policies', { name: 'staff-routers', semantic: 'AnyOf', identityRoles: ['#staff'], edgeRouterRoles: ['#public'] });
  await made('/service-edge-router-policies', { name: 'web-routers', semantic: 'AnyOf', serviceRoles: ['#web'], edgeRouterRoles: ['#all'] });
  await made('/posture-checks', { name: 'corp-domain', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['corp'] });
  await made('/auth-policies', { name: 'pw-only', primary: { cert: { allowed: false, allowExpiredCerts: false }, extJwt: { allowed: false, allowedSigners: [] }, updb: { allowed: true, lockoutDurationMinutes: 0, maxAttempts: 5, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false } }, secondary: { requireTotp: false } });
  reader = await openReader(running.ctx.config);
}, 60_000);
afterAll(async () => {
  await reader?.close();
  await running?.close();
});

/** The app's answer and the reader's, as the CLI sees them (key order included); the request id aside. */
async function both(url: string) {
  const app = await call('GET', url);
  const read = await reader!.get(url);
  const norm = (j: any) => JSON.stringify(j?.error ? { ...j, error: { ...j.error, requestId: '-' } } : j);
  return { app: { status: app.status, json: norm(app.json) }, read: read && { status: read.status, json: norm(read.json) } };
}

describe('local reads without the HTTP app', () => {
  it('is used on SQLite, and not on PostgreSQL (the app answers there)', () => {
    expect(reader === undefined).toBe(pg);
  });

  it('answers every management resource as the app does: lists, pages, filters, rows by id, a missing id', async () => {
    if (!reader) return;
    expect(managementResources.length).toBeGreaterThan(15);
    for (const decl of managementResources) {
      const base = `${MGMT}/${decl.plural}`;
      const urls = [base, `${base}?limit=2&offset=1`, `${base}?limit=1`, ...('name' in decl.filterable ? [`${base}?filter=${encodeURIComponent('name contains "-"')}`] : [])];
      for (const url of urls) {
        const { app, read } = await both(url);
        expect(app.status, `${url}: ${app.json}`).toBe(200);
        expect(read, url).toEqual(app);
      }
      const rows = (await call('GET', base)).json.data as { id: string }[];
      for (const r of rows.slice(0, 3)) {
        const { app, read } = await both(`${base}/${encodeURIComponent(r.id)}`);
        expect(read, `${decl.plural}/${r.id}`).toEqual(app);
      }
      if (decl.ops.includes('get')) {
        const { app, read } = await both(`${base}/no-such-${decl.plural}`);
        expect(app.status).toBe(404);
        expect(read).toEqual(app);
      }
    }
  });

  it('leaves to the app what it does not take', async () => {
    if (!reader) return;
    for (const url of [
      `${MGMT}/identities?sort=name`,
      `${MGMT}/identities?limit=ten`,
      `${MGMT}/identities?filter=${encodeURIComponent('name = ')}`,
      `${MGMT}/identities?roleFilter=%23staff`,
      `${MGMT}/services`,
      `${MGMT}/identities/x/authenticators`,
      `${CLIENT}/current-identity`,
      '/version',
    ]) expect(await reader.get(url), url).toBeUndefined();
  });

  it('prints the same through the built CLI, with the app path and without it', async () => {
    if (!reader) return;
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-local-read-'));
    const ztc = (env: NodeJS.ProcessEnv, ...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, [bin, ...args, '-d', running.ctx.config.dataDir], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: '', ...env }, timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr })),
      );
    try {
      for (const args of [['identity', 'list'], ['identity', 'list', '-o', 'json'], ['identity', 'get', 'laptop-01', '-o', 'yaml'], ['service-policy', 'list'], ['edge-router', 'get', 'er-1'], ['identity', 'get', 'nobody']]) {
        const fast = await ztc({}, ...args);
        const app = await ztc({ ZTC_LOCAL_APP: '1' }, ...args);
        expect(fast, args.join(' ')).toEqual(app);
      }
      // A write after reads, in one command: the app takes it (update resolves the name by reading first).
      const updated = await ztc({}, 'identity', 'update', 'laptop-02', '--role-attributes', 'staff');
      expect(updated.code, updated.stderr).toBe(0);
      expect(JSON.parse((await ztc({}, 'identity', 'get', 'laptop-02', '-o', 'json')).stdout).roleAttributes).toEqual(['staff']);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
