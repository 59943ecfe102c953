// Backpressure, not buffers: when a dialer stops reading, the router stops reading its host (TCP then
// holds the host back) instead of buffering what the host sends; when the dialer reads again, every byte
// arrives. And terminators a dead process left behind are removed when the router starts again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/server/app.js';
import { openDataDir, startController } from '../../src/server/controller.js';
import { ADMIN, CLIENT, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';
import { startNetwork, type TestNetwork } from '../helpers/network.js';
import { CT, H, le32 } from '../peers/edge-sdk.js';

let n: TestNetwork;
beforeAll(async () => {
  n = await startNetwork();
}, 60_000);
afterAll(() => n.close());

const MiB = 1024 * 1024;

describe('a slow reader slows its writer', () => {
  it('holds a host back while its dialer does not read, and delivers every byte once it does', async () => {
    const service = await n.service('flow');
    const host = await n.identity('flow-host', ['flow-hosts']);
    const client = await n.identity('flow-client', ['flow-clients']);
    const h = await n.peer(host);
    const bseq = h.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.RouterProvidedConnId, Buffer.from([1])]], Buffer.from(await n.session(host, service, 'Bind')));
    expect((await h.replyTo(bseq)).type).toBe(CT.StateConnected);
    const d = await n.peer(client);
    const cseq = d.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(await n.session(client, service, 'Dial')));
    const dial = await h.next((f) => f.type === CT.Dial);
    const hostConn = dial.headers.get(H.RouterProvidedConnId)!;
    h.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], hostConn);
    expect((await d.replyTo(cseq)).type).toBe(CT.StateConnected);

    let received = 0;
    d.onFrame = (f) => {
      if (f.type !== CT.Data) return false;
      received += f.body.length;
      return true;
    };
    d.socket.pause();
    const total = 48 * MiB;
    const body = Buffer.alloc(64 * 1024, 1);
    for (let sent = 0; sent < total; sent += body.length) h.send(CT.Data, [[H.ConnId, hostConn], [H.Seq, le32(0)]], body);
    await new Promise((r) => setTimeout(r, 2000));
    // Most of it is still in the host's own socket: the router stopped reading it (it holds at most a
    // few MiB for the dialer, plus what the kernel's buffers take).
    expect(h.socket.writableLength).toBeGreaterThan(total / 2);
    d.socket.resume();
    await expect.poll(() => received, { timeout: 20_000, interval: 100 }).toBe(total);
    expect(h.socket.writableLength).toBe(0);
    h.close();
    d.close();
  }, 40_000);
});

describe('start after a crash', () => {
  it('removes the edge terminators a previous run of the router left', async () => {
    const dataDir = tempDataDir();
    const db = await testDatabase();
    const config = testConfig(dataDir, { port: 0, bind: '127.0.0.1', db });
    let running = await startController(config);
    const routerId = running.fabric!.edge!.id;
    await running.close();
    // What a killed process leaves: an edge terminator on its router, in the store.
    const opened = await openDataDir(testConfig(dataDir, { db }));
    const app = await buildApp(opened.ctx);
    const token = JSON.parse((await app.inject({ method: 'POST', url: `${CLIENT}/authenticate?method=password`, payload: ADMIN })).body).data.token;
    const svc = JSON.parse((await app.inject({ method: 'POST', url: `${MGMT}/services`, headers: { 'zt-session': token }, payload: { name: 'left-behind', encryptionRequired: false } })).body).data.id;
    const made = await app.inject({ method: 'POST', url: `${MGMT}/terminators`, headers: { 'zt-session': token }, payload: { service: svc, router: routerId, binding: 'edge', address: 'stale' } });
    expect(made.statusCode, made.body).toBe(201);
    await app.close();
    await opened.close();
    const progress: string[] = [];
    running = await startController(testConfig(dataDir, { port: 0, bind: '127.0.0.1', db }), { progress: (s) => progress.push(s) });
    try {
      expect(running.fabric!.edge!.id).toBe(routerId);
      expect(progress.join('\n')).toMatch(/removed 1 terminator/);
      const left = await running.ctx.store.db.selectFrom('terminators').select('id').where('routerId', '=', routerId).execute();
      expect(left).toEqual([]);
    } finally {
      await running.close();
    }
  });
});
