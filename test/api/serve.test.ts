// A real listening controller over TLS, and a restart on the same data dir.
import https from 'node:https';
import tls from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { ADMIN, CLIENT, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const dataDir = tempDataDir();
let running: Running | undefined;
afterAll(() => running?.close());

function call(base: string, ca: string, method: string, path: string, o: { token?: string; body?: unknown } = {}) {
  return new Promise<{ status: number; body: any; protocol: string | null }>((resolve, reject) => {
    const req = https.request(`${base}${path}`, { method, ca, agent: false, headers: { ...(o.token ? { 'zt-session': o.token } : {}), ...(o.body ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      const protocol = (res.socket as tls.TLSSocket).getProtocol();
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined, protocol }));
    });
    req.on('error', reject);
    if (o.body) req.write(JSON.stringify(o.body));
    req.end();
  });
}

describe('ztc serve over TLS', () => {
  it('serves HTTPS with a certificate for localhost and 127.0.0.1, and keeps data across a restart', async () => {
    const db = await testDatabase();
    running = await startController(testConfig(dataDir, { port: 0, bind: '127.0.0.1', db }));
    const ca = running.ctx.pki.caBundlePem;
    const port = running.ctx.config.port;
    for (const host of ['localhost', '127.0.0.1']) {
      const v = await call(`https://${host}:${port}`, ca, 'GET', '/version');
      expect(v.status).toBe(200);
      expect(['TLSv1.2', 'TLSv1.3']).toContain(v.protocol);
    }
    const base = `https://127.0.0.1:${port}`;
    const login = await call(base, ca, 'POST', `${CLIENT}/authenticate?method=password`, { body: ADMIN });
    expect(login.status).toBe(200);
    const made = await call(base, ca, 'POST', `${MGMT}/identities`, { token: login.body.data.token, body: { name: 'survivor', type: 'User', isAdmin: false } });
    expect(made.status).toBe(201);
    // TLS below 1.2 is refused.
    await expect(
      new Promise((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port, ca, maxVersion: 'TLSv1.1', minVersion: 'TLSv1' }, () => resolve(s.getProtocol()));
        s.on('error', reject);
      }),
    ).rejects.toThrow();
    const fingerprint = running.ctx.pki.serverFingerprint;
    await running.close();

    running = await startController(testConfig(dataDir, { port: 0, bind: '127.0.0.1', adminPassword: 'a-different-one', db }));
    expect(running.boot.adminCreated).toBe(false);
    expect(running.ctx.pki.serverFingerprint).toBe(fingerprint);
    const base2 = `https://127.0.0.1:${running.ctx.config.port}`;
    const again = await call(base2, ca, 'POST', `${CLIENT}/authenticate?method=password`, { body: ADMIN });
    expect(again.status).toBe(200);
    // The session made before the restart is still valid: sessions live in the database.
    const list = await call(base2, ca, 'GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "survivor"')}`, { token: login.body.data.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((i: { name: string }) => i.name)).toEqual(['survivor']);
  });
});
