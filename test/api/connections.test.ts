// Below the routes: an over-long URL is answered with the error envelope, one address can hold only so
// many connections, and slow or idle connections are closed. Over real TLS sockets (inject has none).
import https from 'node:https';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
const MAX = 3;
beforeAll(async () => {
  c = await startTlsController({ maxConnectionsPerAddress: MAX, headersTimeoutSeconds: 1, idleTimeoutSeconds: 2 });
});
afterAll(() => c.close());

const port = () => c.running.ctx.config.port;
const opts = () => ({ host: '127.0.0.1', port: port(), ca: c.running.ctx.pki.caBundlePem, servername: 'localhost' });

/** A TLS connection: resolves with the socket once the handshake is done, or with the error/close that ended it first. */
function connect(): Promise<tls.TLSSocket | Error> {
  return new Promise((resolve) => {
    const s = tls.connect(opts(), () => resolve(s));
    s.on('error', (e) => resolve(e));
    s.on('close', () => resolve(new Error('closed before the handshake finished')));
  });
}

/** A connection once the address has room again (the server sees earlier closes a moment after the client). */
async function connectWhenFree(): Promise<tls.TLSSocket> {
  let s: tls.TLSSocket | Error = new Error('never tried');
  for (let i = 0; i < 100 && s instanceof Error; i++) s = await connect();
  if (s instanceof Error) throw s;
  return s;
}

/** Everything the server sent until it closed the connection. */
const untilClosed = (s: tls.TLSSocket) =>
  new Promise<string>((resolve) => {
    let got = '';
    s.on('data', (d) => (got += d));
    s.on('error', () => {});
    s.on('close', () => resolve(got));
  });

/** Closed without a word, or with a 408 in the error envelope. */
function timedOut(answer: string): boolean {
  if (answer === '') return true;
  const [head, body] = answer.split('\r\n\r\n');
  return /^HTTP\/1\.1 408 /.test(head) && JSON.parse(body).error.code === 'REQUEST_TIMEOUT';
}

describe('connections', () => {
  it('answers an over-long URL with 431 and the error envelope', async () => {
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      https
        .get({ ...opts(), path: `/edge/client/v1/version?pad=${'a'.repeat(20_000)}`, agent: false }, (res) => {
          let body = '';
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        })
        .on('error', reject);
    });
    expect(r.status).toBe(431);
    const body = JSON.parse(r.body);
    expect(body.error).toMatchObject({ code: 'REQUEST_HEADERS_TOO_LARGE', message: expect.stringMatching(/longer than the server accepts/), requestId: expect.any(String) });
    expect(body.meta.apiVersion).toBeTruthy();
  });

  it(`lets one address hold at most ${MAX} connections in use`, async () => {
    const held: tls.TLSSocket[] = [];
    for (let i = 0; i < MAX; i++) {
      const s = await connect();
      if (s instanceof Error) throw s;
      // A request answered: the connection is in use (kept alive), no longer the first to go.
      const answered = new Promise((r) => s.once('data', r));
      s.write('GET /edge/client/v1/version HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n');
      await answered;
      held.push(s);
    }
    expect(await connect()).toBeInstanceOf(Error);
    // Once one closes, its place is free again (the server sees the close a moment later).
    const closed = new Promise((r) => held[0].on('close', r));
    held[0].destroy();
    await closed;
    const again = await connectWhenFree();
    for (const s of [...held.slice(1), again]) s.destroy();
  });

  it('does not let silent connections lock the address out: the oldest that sent nothing makes room, and is counted', async () => {
    const admin = await c.login();
    const refused = async () => Number(/^ztc_connections_refused_total\{listener="api",reason="address_cap"\} (\d+)/m.exec((await c.call('GET', '/metrics', { token: admin })).text)?.[1] ?? NaN);
    const before = await refused();
    const held: tls.TLSSocket[] = [];
    for (let i = 0; i < MAX; i++) {
      const s = await connectWhenFree();
      s.on('error', () => {});
      held.push(s);
    }
    const oldestClosed = new Promise((r) => held[0].on('close', r));
    // A newcomer at the cap: accepted, and the oldest silent connection closed for it.
    const newcomer = await connect();
    expect(newcomer).not.toBeInstanceOf(Error);
    await oldestClosed;
    const answer = untilClosed(newcomer as tls.TLSSocket);
    (newcomer as tls.TLSSocket).write('GET /edge/client/v1/version HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect(await answer).toMatch(/^HTTP\/1\.1 200 /);
    for (const s of held) s.destroy();
    await new Promise((r) => setTimeout(r, 100));
    expect(await refused()).toBeGreaterThanOrEqual(before + 1);
  });

  it('closes a connection whose headers do not arrive in time (slowloris)', async () => {
    const s = await connectWhenFree();
    const answer = untilClosed(s);
    s.write('GET /version HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
    // Resolves only when the server closes the connection (the test's own timeout bounds the wait).
    expect(timedOut(await answer)).toBe(true);
  }, 15_000);

  it('closes a slow request\'s socket after its 408, even while the client keeps trickling', async () => {
    const s = await connectWhenFree();
    const closed = new Promise<number>((resolve) => s.on('close', () => resolve(Date.now())));
    s.on('error', () => {});
    s.write('GET /version HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
    const started = Date.now();
    const trickle = setInterval(() => !s.destroyed && s.write('a'), 200);
    try {
      expect((await closed) - started).toBeLessThan(6000);
    } finally {
      clearInterval(trickle);
    }
  }, 15_000);

  it('closes a connection that stays idle after a request', async () => {
    const s = await connectWhenFree();
    const answer = untilClosed(s);
    s.write('GET /version HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n');
    expect(await answer).toMatch(/^HTTP\/1\.1 200 /);
  }, 15_000);

  it('closes a connection that never sends anything', async () => {
    const s = await connectWhenFree();
    expect(timedOut(await untilClosed(s))).toBe(true);
  }, 15_000);
});
