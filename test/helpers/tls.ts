// A controller listening over TLS, and a client that can present a certificate on the connection.
import { spawn, type ChildProcess } from 'node:child_process';
import { tracked } from './cli.js';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { Config } from '../../src/config.js';
import { ManualClock } from '../../src/model/clock.js';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, CLIENT, tempDataDir, testConfig, testDatabase } from './controller.js';

export interface TlsController {
  running: Running;
  clock: ManualClock;
  dataDir: string;
  /** https://127.0.0.1:PORT */
  base: string;
  /** `token` goes in zt-session, `bearer` in Authorization: Bearer (API tokens). */
  call(method: string, path: string, o?: { token?: string; bearer?: string; body?: unknown; cert?: string; key?: string; contentType?: string; accept?: string; headers?: Record<string, string> }): Promise<{ status: number; body: any; text: string; headers: Record<string, unknown> }>;
  login(): Promise<string>;
  close(): Promise<void>;
}

/** `o.logger`: the app's logger (the data plane's log lines reach it too); none by default. */
export async function startTlsController(extra: Partial<Config> = {}, o: { logger?: NonNullable<Parameters<typeof startController>[1]>['logger'] } = {}): Promise<TlsController> {
  const dataDir = tempDataDir();
  const clock = new ManualClock();
  const running = await startController(testConfig(dataDir, { port: 0, bind: '127.0.0.1', db: await testDatabase(), ...extra }), { clock, logger: o.logger });
  const base = `https://127.0.0.1:${running.ctx.config.port}`;
  const ca = running.ctx.pki.caBundlePem;
  const tc: TlsController = {
    running,
    clock,
    dataDir,
    base,
    call(method, path, o = {}) {
      return new Promise((resolve, reject) => {
        const payload = o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
        const req = https.request(
          base + path,
          {
            method, ca, cert: o.cert, key: o.key, agent: false,
            headers: {
              accept: o.accept ?? 'application/json',
              ...(o.token ? { 'zt-session': o.token } : {}),
              ...(o.bearer ? { authorization: `Bearer ${o.bearer}` } : {}),
              ...o.headers,
              ...(payload !== undefined ? { 'content-type': o.contentType ?? (typeof o.body === 'string' ? 'text/plain' : 'application/json') } : {}),
            },
          },
          (res) => {
            let text = '';
            res.on('data', (d) => (text += d));
            res.on('end', () => {
              let body: unknown;
              try {
                body = JSON.parse(text);
              } catch {
                body = undefined;
              }
              resolve({ status: res.statusCode ?? 0, body, text, headers: res.headers });
            });
          },
        );
        req.on('error', reject);
        if (payload !== undefined) req.write(payload);
        req.end();
      });
    },
    async login() {
      const r = await tc.call('POST', `${CLIENT}/authenticate?method=password`, { body: ADMIN });
      return r.body.data.token;
    },
    async close() {
      await running.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return tc;
}

// --- A `ztc serve` child process (for tests that kill it), and calls to it that never throw. ---

const bin = path.resolve('bin/ztc');

export interface ServeChild {
  child: ChildProcess;
  /** https://127.0.0.1:PORT of the client API, as the child printed it. */
  base: string;
  /** Everything the child wrote so far (stdout and stderr). */
  out(): string;
}

/** `ztc serve` on `dir` with the database `db` ('' for SQLite), no rate limits, the admin's password set. */
export function serveChild(dir: string, db: string, password: string): Promise<ServeChild> {
  const child = tracked(spawn(process.execPath, [bin, 'serve', '-d', dir, '--port', '0', '--bind', '127.0.0.1', '--hostnames', 'localhost', '--admin-password', password, '--log-level', 'error', '--auth-rate-limit-per-minute', '0', '--api-rate-limit-per-minute', '0'], {
    env: { ...process.env, ZTC_DB: db, ZTC_DATA_DIR: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  return new Promise((resolve, reject) => {
    const seen = (d: Buffer) => {
      out += d.toString();
      const m = /client API\s+(https:\/\/[^/\s]+)/.exec(out);
      if (m) resolve({ child, base: m[1], out: () => out });
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
}

/**
 * A JSON call to a child served from `dir` (trusting its root CA). Status 0 when the connection failed:
 * a killed server resets it, and such a write was never acknowledged.
 */
export function childCall(dir: string, base: string, method: string, p: string, token?: string, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve) => {
    const req = https.request(`${base}${p}`, { method, ca: fs.readFileSync(path.join(dir, 'pki', 'root.pem'), 'utf8'), agent: false, headers: { ...(token ? { 'zt-session': token } : {}), ...(body ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let t = '';
      res.on('data', (d) => (t += d));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(t) });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: undefined });
        }
      });
      res.on('error', () => resolve({ status: 0, body: undefined }));
    });
    req.on('error', () => resolve({ status: 0, body: undefined }));
    req.end(body ? JSON.stringify(body) : undefined);
  });
}
