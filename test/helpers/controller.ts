// A real controller on a temp data dir: real SQLite file, real PKI, real password hashing.
// Requests go through fastify inject (the whole HTTP stack but the socket) unless a test listens.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { ManualClock } from '../../src/model/clock.js';
import { buildApp, type App } from '../../src/server/app.js';
import { openDataDir, type Opened } from '../../src/server/controller.js';

export const ADMIN = { username: 'admin', password: 'admin-pass-1' };
export const MGMT = '/edge/management/v1';
export const CLIENT = '/edge/client/v1';

export function tempDataDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-test-'));
  fs.cpSync(inject('pkiTemplate') + '/pki', path.join(dir, 'pki'), { recursive: true });
  return dir;
}

export function testConfig(dataDir: string, extra: Partial<Config> = {}): Config {
  // The edge router on any free port: test files run in parallel.
  return { ...loadConfig({ dataDir, adminPassword: ADMIN.password }, {}), hostnames: ['localhost'], routerPort: 0, ctrlPort: 0, ...extra };
}

/**
 * The database of one test: '' (the data dir's SQLite file) unless ZTC_TEST_DB names a PostgreSQL
 * server, in which case a fresh database is created there, so test files stay independent.
 */
export async function testDatabase(): Promise<string> {
  const server = process.env.ZTC_TEST_DB;
  if (!server) return '';
  const name = `ztc_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface TestController {
  app: App;
  opened: Opened;
  clock: ManualClock;
  dataDir: string;
  config: Config;
  /** The controller's error-level log lines (the cause of a 500 a test saw), the last 20. */
  errors: string[];
  call(method: string, url: string, o?: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Record<string, unknown>; text: string }>;
  login(username?: string, password?: string): Promise<string>;
  /** Create an identity with a updb authenticator; returns its id. */
  user(name: string, o?: { isAdmin?: boolean; password?: string }): Promise<string>;
  close(): Promise<void>;
}

export async function startTestController(o: { dataDir?: string; config?: Partial<Config> } = {}): Promise<TestController> {
  const dataDir = o.dataDir ?? tempDataDir();
  const config = testConfig(dataDir, { db: await testDatabase(), ...o.config });
  const clock = new ManualClock();
  const opened = await openDataDir(config, { clock });
  const errors: string[] = [];
  const logger = { level: 'error', stream: { write: (line: string) => void errors.push(line) > 20 && errors.shift() } };
  const app = await buildApp(opened.ctx, { logger });
  let adminToken = '';
  const tc: TestController = {
    app, opened, clock, dataDir, config, errors,
    async call(method, url, c = {}) {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: { ...(c.token ? { 'zt-session': c.token } : {}), ...(c.body !== undefined ? { 'content-type': 'application/json' } : {}), ...c.headers },
        ...(c.body !== undefined ? { payload: typeof c.body === 'string' ? c.body : JSON.stringify(c.body) } : {}),
      });
      let body: unknown;
      try {
        body = JSON.parse(res.body);
      } catch {
        body = undefined;
      }
      return { status: res.statusCode, body, headers: res.headers, text: res.body };
    },
    async login(username = ADMIN.username, password = ADMIN.password) {
      const r = await tc.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username, password } });
      if (r.status !== 200) throw new Error(`login ${username} failed: ${r.status} ${r.text}`);
      return r.body.data.token as string;
    },
    async user(name, u = {}) {
      if (!adminToken) adminToken = await tc.login();
      let created = await tc.call('POST', `${MGMT}/identities`, { token: adminToken, body: { name, type: 'User', isAdmin: !!u.isAdmin } });
      if (created.status === 401) {
        // The test moved the clock past the session's lifetime.
        adminToken = await tc.login();
        created = await tc.call('POST', `${MGMT}/identities`, { token: adminToken, body: { name, type: 'User', isAdmin: !!u.isAdmin } });
      }
      if (created.status !== 201) throw new Error(`create ${name}: ${created.text}`);
      const id = created.body.data.id as string;
      const auth = await tc.call('POST', `${MGMT}/authenticators`, { token: adminToken, body: { identityId: id, method: 'updb', username: name, password: u.password ?? 'password1' } });
      if (auth.status !== 201) throw new Error(`authenticator ${name}: ${auth.text}`);
      return id;
    },
    async close() {
      await app.close();
      await opened.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return tc;
}

/**
 * The usual start of an API test file, in one line: a controller for the file's tests, started before
 * them and closed after, with the default admin logged in. Read `.c` and `.admin` inside the tests.
 */
export function controllerForFile(o: Parameters<typeof startTestController>[0] = {}) {
  const file = {
    c: undefined as unknown as TestController,
    admin: '',
    /** A management API call as the file's admin. */
    mgmt: (method: string, path: string, body?: unknown) => file.c.call(method, `${MGMT}${path}`, { token: file.admin, body }),
    /** Create through the management API as the admin (asserting 201) and give the new id. */
    created: async (path: string, body: unknown) => {
      const r = await file.mgmt('POST', path, body);
      expect(r.status, r.text).toBe(201);
      return r.body.data.id as string;
    },
  };
  beforeAll(async () => {
    file.c = await startTestController(o);
    file.admin = await file.c.login();
  });
  afterAll(() => file.c?.close());
  return file;
}

/** Asserts the upstream error envelope and returns its error object. */
export function expectError(r: { status: number; body: any }, status: number, code?: string) {
  if (r.status !== status || !r.body?.error || (code && r.body.error.code !== code)) {
    throw new Error(`expected ${status} ${code ?? ''}, got ${r.status} ${JSON.stringify(r.body)}`);
  }
  if (typeof r.body.error.requestId !== 'string' || !r.body.error.requestId) throw new Error('error without requestId');
  if (typeof r.body.error.message !== 'string' || !r.body.meta?.apiVersion) throw new Error('error envelope incomplete');
  return r.body.error;
}
