// Silent connections cannot lock an address out: 300 TCP connections that never send a ClientHello fill
// the per-address cap (256), are closed by the server at the handshake deadline (1 s here), and once they
// are gone the same address logs in. Before, a connection older than the deadline was never closed, its
// slot never freed, and the address stayed refused until a restart.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, ADMIN } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
beforeAll(async () => {
  c = await startTlsController({ maxConnectionsPerAddress: 256, headersTimeoutSeconds: 1 });
});
afterAll(() => c.close());

describe('connections that never start TLS', () => {
  it('are closed at the deadline, free their slots, and the address logs in again', async () => {
    const port = c.running.ctx.config.port;
    const started = Date.now();
    const closedBy = await Promise.all(
      Array.from({ length: 300 }, () =>
        new Promise<number>((resolve) => {
          const s = net.connect(port, '127.0.0.1');
          s.on('error', () => {});
          s.on('close', () => resolve(Date.now() - started));
        }),
      ),
    );
    // Every one closed by the server: 44 over the cap at once, the rest at the 1 s deadline.
    expect(Math.max(...closedBy)).toBeLessThan(5000);
    const login = await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: ADMIN });
    expect(login.status).toBe(200);
  }, 20_000);

  it('a client that gives up first is not kept half-open', async () => {
    const port = c.running.ctx.config.port;
    const sockets = await Promise.all(Array.from({ length: 256 }, () => new Promise<net.Socket>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.on('error', () => {});
    })));
    for (const s of sockets) s.end();
    await new Promise((r) => setTimeout(r, 300));
    const login = await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: ADMIN });
    expect(login.status).toBe(200);
  }, 20_000);
});
