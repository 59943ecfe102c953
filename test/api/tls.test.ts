// TLS is sane: 1.2 at least, forward-secret AEAD suites only, and a server certificate naming what the
// configuration says (plus the loopback names).
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { issueCertificate, newRsaKey } from '../../src/model/pki/certs.js';
import { loadOrCreatePki, serverNames } from '../../src/model/pki/pki.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTlsController, type TlsController } from '../helpers/tls.js';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

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
    // A server certificate, not a client one: it cannot be used to authenticate to anything.
    expect(cert.keyUsage).toContain(SERVER_AUTH);
    expect(cert.keyUsage).not.toContain(CLIENT_AUTH);
  });

  it('re-issues at start a server certificate of an earlier version that also allowed client authentication', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-pki-old-'));
    try {
      fs.cpSync(path.join(c.running.ctx.config.dataDir, 'pki'), path.join(dir, 'pki'), { recursive: true });
      const pki = path.join(dir, 'pki');
      const key = newRsaKey(2048);
      const old = issueCertificate({
        commonName: 'localhost', publicKey: key.publicKey, issuerPem: fs.readFileSync(path.join(pki, 'intermediate.pem'), 'utf8'),
        issuerKeyPem: fs.readFileSync(path.join(pki, 'intermediate.key'), 'utf8'), days: 365, sans: serverNames(['localhost']), usage: 'server+client',
      });
      fs.writeFileSync(path.join(pki, 'server.pem'), old);
      fs.writeFileSync(path.join(pki, 'server.key'), key.privatePem, { mode: 0o600 });
      expect(new X509Certificate(old).keyUsage).toContain(CLIENT_AUTH);
      const loaded = await loadOrCreatePki(dir, ['localhost']);
      expect(new X509Certificate(loaded.serverPem).keyUsage).toEqual([SERVER_AUTH]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
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
