// Upstream's 2.1 security advisories, each of which applies to any controller of these APIs, checked
// one by one against ztc over real TLS: request bodies capped before authentication, the API session's
// certificates scoped to their caller, JWKS fetches unable to reach the controller's own network,
// no enrollment by an external JWT (so none with a wrong audience or issuer), and whole certificate
// chains validated rather than only the leaf.
import http from 'node:http';
import tls from 'node:tls';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isInternalAddress } from '../../src/model/auth/jwks-fetch.js';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { ecCsr, TestCa } from '../helpers/certs.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController({ authRateLimitPerMinute: 0 });
  admin = await c.login();
});
afterAll(() => c.close());

const port = () => c.running.ctx.config.port;

/** Send `head` (and then `body`, if any) on a fresh TLS connection; resolves with what came back and whether the server closed. */
function raw(head: string, o: { body?: Buffer | string; waitMs?: number } = {}): Promise<{ text: string; closed: boolean; ms: number; firstMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const s = tls.connect({ host: '127.0.0.1', port: port(), ca: c.running.ctx.pki.caBundlePem, servername: 'localhost' }, () => {
      s.write(head);
      if (o.body) s.write(o.body);
    });
    let text = '';
    let firstMs = 0;
    const done = (closed: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve({ text, closed, ms: performance.now() - started, firstMs });
    };
    s.on('data', (d) => {
      firstMs ||= performance.now() - started;
      text += d;
    });
    s.on('error', (e) => (text ? done(true) : reject(e)));
    s.on('close', () => done(true));
    const timer = setTimeout(() => done(false), o.waitMs ?? 3000);
  });
}
const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
const bodyOf = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

describe('request bodies are capped before authentication', () => {
  it('refuses an unauthenticated import declaring 300 MB at once, without reading it', async () => {
    const r = await raw(`POST ${MGMT}/import HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 300000000\r\n\r\n{"identities":[`, { waitMs: 5000 });
    expect(statusOf(r.text)).toBe(401);
    expect(bodyOf(r.text).error.code).toBe('UNAUTHORIZED');
    // The server neither waits for the 300 MB before answering nor waits for them after: it reads
    // what follows for 2 s at most (so a client still sending reads its answer), then closes.
    expect(r.firstMs).toBeLessThan(1000);
    expect(r.closed).toBe(true);
    expect(r.ms).toBeLessThan(3500);
  });

  it('stops reading an unauthenticated body after 1 MiB', async () => {
    const started = performance.now();
    const sent = await new Promise<{ bytes: number; closed: boolean }>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port: port(), ca: c.running.ctx.pki.caBundlePem, servername: 'localhost' }, () => {
        s.write(`POST ${MGMT}/import HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 300000000\r\n\r\n`);
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (!s.destroyed && bytes < 300_000_000 && s.write(chunk)) bytes += chunk.length;
          if (!s.destroyed && bytes < 300_000_000) s.once('drain', pump);
        };
        pump();
      });
      let bytes = 0;
      s.on('error', () => {});
      s.on('close', () => resolve({ bytes, closed: true }));
      setTimeout(() => {
        s.destroy();
        resolve({ bytes, closed: false });
      }, 5000);
    });
    expect(sent.closed).toBe(true);
    // What the client got into the socket before the server closed it: about the 1 MiB read and dropped,
    // plus what the kernel buffers held; nowhere near the 300 MB declared.
    expect(sent.bytes).toBeLessThan(32 * 1024 * 1024);
    expect(performance.now() - started).toBeLessThan(4000);
  });

  it('answers 413 to a public route given more than 1 MiB, declared or streamed', async () => {
    const big = JSON.stringify({ username: 'admin', password: 'x'.repeat(2 * 1024 * 1024) });
    const declared = await raw(`POST ${CLIENT}/authenticate?method=password HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n`);
    expect(statusOf(declared.text)).toBe(413);
    expect(bodyOf(declared.text).error.requestId).toBeTruthy();
    // Chunked: no length up front, so the cap applies as the bytes arrive.
    const chunk = Buffer.from('x'.repeat(256 * 1024));
    const chunks = Array.from({ length: 8 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('');
    const streamed = await raw(`POST ${CLIENT}/authenticate?method=password HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`, { body: chunks });
    expect(statusOf(streamed.text)).toBe(413);
    // The controller still answers normally.
    expect((await c.call('GET', '/version')).status).toBe(200);
  });
});

describe('current-api-session/certificates belong to their API session', () => {
  it('shows, finds and deletes only the caller\'s own certificates', async () => {
    const users: Record<string, string> = {};
    for (const name of ['cert-owner', 'cert-other']) {
      const id = (await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'User', isAdmin: false } })).body.data.id;
      await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: name, password: 'password1' } });
      users[name] = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: name, password: 'password1' } })).body.data.token;
    }
    const owner = users['cert-owner'];
    const other = users['cert-other'];
    const made = await c.call('POST', `${CLIENT}/current-api-session/certificates`, { token: owner, body: { csr: ecCsr('session-cert').csrPem } });
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id;
    const ownerSession = (await c.call('GET', `${CLIENT}/current-api-session`, { token: owner })).body.data.id;
    const list = (token: string, filter?: string) => c.call('GET', `${CLIENT}/current-api-session/certificates${filter ? `?filter=${encodeURIComponent(filter)}` : ''}`, { token });
    expect((await list(owner)).body.data.map((x: { id: string }) => x.id)).toEqual([id]);
    // Another identity: not by listing, not by filtering on the owner's session or the id, not by id.
    expect((await list(other)).body.data).toEqual([]);
    expect((await list(other)).body.meta.pagination.totalCount).toBe(0);
    expect((await list(other, `apiSession = "${ownerSession}"`)).body.data).toEqual([]);
    expect((await list(other, `id = "${id}" or true`)).body.data ?? []).toEqual([]);
    expectError(await c.call('GET', `${CLIENT}/current-api-session/certificates/${id}`, { token: other }), 404, 'NOT_FOUND');
    expectError(await c.call('DELETE', `${CLIENT}/current-api-session/certificates/${id}`, { token: other }), 404, 'NOT_FOUND');
    // Even the same identity's other API session does not see it (it ends with the session that made it).
    const again = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'cert-owner', password: 'password1' } })).body.data.token;
    expect((await list(again)).body.data).toEqual([]);
    expect((await list(owner)).body.data).toHaveLength(1);
  });
});

describe('JWKS fetches cannot reach the controller\'s own network', () => {
  let server: http.Server;
  let jwksPort = 0;
  const hits: string[] = [];
  let key: CryptoKey;
  let served: JWK[] = [];
  beforeAll(async () => {
    const pair = await generateKeyPair('RS256');
    key = pair.privateKey;
    served = [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }];
    server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      if (req.url === '/silent') return; // never answers
      if (req.url === '/huge') {
        res.setHeader('content-type', 'application/json');
        res.write(`{"keys":[],"pad":"`);
        const chunk = 'x'.repeat(64 * 1024);
        let sent = 0;
        const more = () => {
          while (sent < 64 && res.write(chunk)) sent++;
          if (sent < 64) res.once('drain', more);
          else res.end('"}');
        };
        res.on('error', () => {});
        return more();
      }
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://127.0.0.1:${jwksPort}/jwks` });
        return res.end();
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: served }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    jwksPort = (server.address() as { port: number }).port;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  const signer = (name: string, jwksEndpoint: string) =>
    c.call('POST', `${MGMT}/external-jwt-signers`, { token: admin, body: { name, enabled: true, issuer: `https://${name}.example`, audience: 'ztc', jwksEndpoint, claimsProperty: 'sub' } });
  const token = (issuer: string, sub: string) => {
    const now = Math.floor(c.clock.now().getTime() / 1000);
    return new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(issuer).setAudience('ztc').setSubject(sub).setIssuedAt(now).setExpirationTime(now + 600).sign(key);
  };
  const extLogin = async (jwt: string) => {
    const r = await raw(`POST ${CLIENT}/authenticate?method=ext-jwt HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${jwt}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, { waitMs: 15_000 });
    return { status: statusOf(r.text), ms: r.ms };
  };

  it('classifies loopback, private, link-local, mapped and metadata addresses as internal', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', 'not-an-address']) {
      expect(isInternalAddress(a), a).toBe(true);
    }
    for (const a of ['1.1.1.1', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isInternalAddress(a), a).toBe(false);
  });

  it('refuses to save a signer whose JWKS endpoint is an internal address, saying how to allow it', async () => {
    for (const url of [`http://127.0.0.1:${jwksPort}/jwks`, 'http://169.254.169.254/latest/meta-data', 'http://[::1]/jwks', 'http://localhost/jwks', 'https://10.0.0.7/jwks', 'http://[::ffff:127.0.0.1]/jwks']) {
      const r = await signer(`internal-${hits.length}-${Math.random().toString(36).slice(2, 6)}`, url);
      expect(expectError(r, 400, 'INVALID_FIELD').message, url).toMatch(/jwksPrivateHosts/);
    }
    expect(hits).toEqual([]);
  });

  it('does not fetch from an internal address at login either (a signer saved before the rule)', async () => {
    const id = (await signer('public-idp', 'https://idp.example/jwks')).body.data.id;
    await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'ssrf-target', type: 'User', isAdmin: false } });
    const identityId = (await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "ssrf-target"')}`, { token: admin })).body.data[0].id;
    // Written straight into the database, as an older version (or a restore) could have left it.
    await c.running.ctx.store.db.updateTable('externalJwtSigners').set({ jwksEndpoint: `http://127.0.0.1:${jwksPort}/jwks` }).where('id', '=', id).execute();
    expect((await extLogin(await token('https://public-idp.example', identityId))).status).toBe(401);
    expect(hits).toEqual([]);
  });

  it('with the host listed, fetches, but within a time limit, a size limit and without following redirects', async () => {
    c.running.ctx.config.jwksPrivateHosts = ['127.0.0.1'];
    try {
      const base = `http://127.0.0.1:${jwksPort}`;
      for (const [name, path] of [['listed-ok', '/jwks'], ['listed-silent', '/silent'], ['listed-huge', '/huge'], ['listed-redirect', '/redirect']]) {
        expect((await signer(name, base + path)).status).toBe(201);
      }
      const identityId = (await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "ssrf-target"')}`, { token: admin })).body.data[0].id;
      expect((await extLogin(await token('https://listed-ok.example', identityId))).status).toBe(200);
      const slow = await extLogin(await token('https://listed-silent.example', identityId));
      expect(slow.status).toBe(401);
      expect(slow.ms).toBeLessThan(7000);
      expect((await extLogin(await token('https://listed-huge.example', identityId))).status).toBe(401);
      hits.length = 0;
      expect((await extLogin(await token('https://listed-redirect.example', identityId))).status).toBe(401);
      expect(hits).toEqual(['/redirect']);
    } finally {
      c.running.ctx.config.jwksPrivateHosts = [];
    }
  });
});

describe('no enrollment by external JWT, so none with a wrong audience or issuer', () => {
  it('refuses a signer\'s JWT as an enrollment, whatever its audience and issuer, and creates nothing', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const count = async () => (await c.call('GET', `${MGMT}/identities?limit=1`, { token: admin })).body.meta.pagination.totalCount;
    const before = await count();
    const now = Math.floor(c.clock.now().getTime() / 1000);
    for (const [iss, aud] of [['https://elsewhere.example', 'ztc'], ['https://idp.example', 'not-ztc'], ['https://idp.example', 'ztc']]) {
      const jwt = await new SignJWT({ em: 'ott', jti: 'x' }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(iss).setAudience(aud).setSubject('new-device').setIssuedAt(now).setExpirationTime(now + 600).sign(privateKey);
      for (const path of [`${CLIENT}/enroll?method=ext-jwt`, `${CLIENT}/enroll/ott`, `${CLIENT}/enroll/ott?token=${jwt}`]) {
        const csr = ecCsr('ext-jwt-device').csrPem;
        const r = await raw(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${jwt}\r\nContent-Type: application/x-pem-file\r\nContent-Length: ${csr.length}\r\nConnection: close\r\n\r\n${csr}`);
        const status = statusOf(r.text);
        expect(status >= 400 && status < 500, `${path}: ${r.text}`).toBe(true);
      }
    }
    expect(await count()).toBe(before);
  });
});

describe('certificate chains are validated, not only the leaf', () => {
  const day = 86_400_000;
  /** A certificate under `issuer`, forged as the test needs: a CA or not, valid until `notAfter`. */
  function issue(issuer: { cert: forge.pki.Certificate; keys: forge.pki.rsa.KeyPair }, cn: string, o: { ca: boolean; notAfter: Date; notBefore?: Date }) {
    const keys = forge.pki.rsa.generateKeyPair(1024);
    const cert = forge.pki.createCertificate();
    cert.publicKey = keys.publicKey;
    cert.serialNumber = '03' + forge.util.bytesToHex(forge.random.getBytesSync(8));
    cert.validity.notBefore = o.notBefore ?? new Date(Date.now() - 60_000);
    cert.validity.notAfter = o.notAfter;
    cert.setSubject([{ name: 'commonName', value: cn }]);
    cert.setIssuer(issuer.cert.subject.attributes);
    cert.setExtensions(o.ca ? [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, digitalSignature: true, critical: true }] : [{ name: 'basicConstraints', cA: false }, { name: 'extKeyUsage', clientAuth: true }]);
    cert.sign(issuer.keys.privateKey, forge.md.sha256.create());
    return { cert, keys, pem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
  }
  let root: TestCa;
  beforeAll(async () => {
    root = new TestCa('Chain Root');
    const r = await c.call('POST', `${MGMT}/cas`, { token: admin, body: { name: root.name, certPem: root.pem, identityRoles: [], identityNameFormat: '[caName]-[commonName]', isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true } });
    const id = r.body.data.id;
    const verificationToken = (await c.call('GET', `${MGMT}/cas/${id}`, { token: admin })).body.data.verificationToken;
    expect((await c.call('POST', `${MGMT}/cas/${id}/verify`, { token: admin, body: root.issue(verificationToken).certPem, contentType: 'text/plain' })).status).toBe(200);
  });
  const enrollCa = (chain: string, key: string) => c.call('POST', `${CLIENT}/enroll/ca`, { cert: chain, key });
  const certLogin = (chain: string, key: string) => c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert: chain, key, body: {} });

  it('accepts a leaf under a valid intermediate CA, refuses one under a non-CA, a foreign or an expired intermediate', async () => {
    const rootPair = { cert: root.cert, keys: root.keys };
    const mid = issue(rootPair, 'Chain Mid', { ca: true, notAfter: new Date(Date.now() + 2 * day) });
    const good = issue(mid, 'chained-device', { ca: false, notAfter: new Date(Date.now() + 5 * day) });
    const r = await enrollCa(good.pem + mid.pem, good.keyPem);
    expect(r.status, r.text).toBe(200);
    expect((await certLogin(good.pem + mid.pem, good.keyPem)).status).toBe(200);

    // A leaf certificate of the root used as an intermediate.
    const notCa = issue(rootPair, 'Chain Not CA', { ca: false, notAfter: new Date(Date.now() + 5 * day) });
    const underLeaf = issue(notCa, 'under-leaf', { ca: false, notAfter: new Date(Date.now() + 5 * day) });
    expectError(await enrollCa(underLeaf.pem + notCa.pem, underLeaf.keyPem), 400, 'ENROLLMENT_NO_VALID_CAS');
    // An intermediate with the root's name but not signed by it.
    const impostorRoot = new TestCa('Chain Root');
    const impostorMid = issue({ cert: impostorRoot.cert, keys: impostorRoot.keys }, 'Chain Mid', { ca: true, notAfter: new Date(Date.now() + 5 * day) });
    const underImpostor = issue(impostorMid, 'under-impostor', { ca: false, notAfter: new Date(Date.now() + 5 * day) });
    expectError(await enrollCa(underImpostor.pem + impostorMid.pem, underImpostor.keyPem), 400, 'ENROLLMENT_NO_VALID_CAS');
    // An intermediate already expired, under a leaf still valid.
    const oldMid = issue(rootPair, 'Chain Old Mid', { ca: true, notBefore: new Date(Date.now() - 2 * day), notAfter: new Date(Date.now() - day) });
    const underOld = issue(oldMid, 'under-expired-mid', { ca: false, notAfter: new Date(Date.now() + 5 * day) });
    expectError(await enrollCa(underOld.pem + oldMid.pem, underOld.keyPem), 400, 'ENROLLMENT_NO_VALID_CAS');

    // Three days on, the good chain's intermediate has expired while its leaf has not: no more logins.
    c.clock.advance(3 * day);
    try {
      expectError(await certLogin(good.pem + mid.pem, good.keyPem), 401, 'INVALID_AUTH');
    } finally {
      c.clock.advance(-3 * day);
    }
    expect((await certLogin(good.pem + mid.pem, good.keyPem)).status).toBe(200);
  });
});
