// TLS is sane: 1.2 at least, forward-secret AEAD suites only, and a server certificate naming what the
// configuration says (plus the loopback names).
import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
beforeAll(async () => {
  c = await startTlsController();
});
afterAll(() => c.close());

function handshake(o: tls.ConnectionOptions): Promise<{ protocol: string | null; cipher: string; cert: tls.PeerCertificate } | Error> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port: c.running.ctx.config.port, ca: c.running.ctx.pki.caBundlePem, servername: 'localhost', ...o }, () => {
      const out = { protocol: socket.getProtocol(), cipher: socket.getCipher().name, cert: socket.getPeerCertificate() };
      socket.end();
      resolve(out);
    });
    socket.on('error', (e) => resolve(e));
  });
}

describe('TLS', () => {
  it('negotiates TLS 1.3 by default and names the configured hosts', async () => {
    const r = await handshake({});
    if (r instanceof Error) throw r;
    expect(r.protocol).toBe('TLSv1.3');
    const cert = new X509Certificate(r.cert.raw);
    for (const name of ['DNS:localhost', 'IP Address:127.0.0.1']) expect(cert.subjectAltName).toContain(name);
    expect(c.running.ctx.config.hostnames.every((h) => cert.subjectAltName?.includes(`DNS:${h}`))).toBe(true);
  });

  it('accepts TLS 1.2 only with forward-secret AEAD suites, and refuses older protocols', async () => {
    const ok = await handshake({ maxVersion: 'TLSv1.2' });
    if (ok instanceof Error) throw ok;
    expect(ok.protocol).toBe('TLSv1.2');
    expect(ok.cipher).toMatch(/^ECDHE-.*(GCM|CHACHA20)/);
    expect(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'AES128-SHA:AES256-SHA256' })).toBeInstanceOf(Error);
    expect(await handshake({ maxVersion: 'TLSv1.1', minVersion: 'TLSv1' })).toBeInstanceOf(Error);
  });
});
