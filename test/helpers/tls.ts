// A controller listening over TLS, and a client that can present a certificate on the connection.
import fs from 'node:fs';
import https from 'node:https';
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

export async function startTlsController(extra: Partial<Config> = {}): Promise<TlsController> {
  const dataDir = tempDataDir();
  const clock = new ManualClock();
  const running = await startController(testConfig(dataDir, { port: 0, bind: '127.0.0.1', db: await testDatabase(), ...extra }), { clock });
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
