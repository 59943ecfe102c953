// The crypto worker pool through the API: what the workers compute equals what the same code computes
// in this thread, a full queue answers 429 with the envelope, and a burst of enrollments all succeeds.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/model/errors.js';
import { cryptoTasks } from '../../src/model/crypto/tasks.js';
import { DEFAULT_HASH_COST, hashCost } from '../../src/model/auth/password.js';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';
import { ecCsr, rsaCsr } from '../helpers/certs.js';

const ottIdentity = async (c: TestController, admin: string, name: string) => {
  const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, enrollment: { ott: true } } });
  expect(r.status, r.text).toBe(201);
  const id = r.body.data.id as string;
  const token = (await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data.enrollment.ott.token as string;
  return { id, token };
};

/** What a certificate says, without what differs on every issue (serial, times, signature). */
const shape = (pem: string) => {
  const x = new X509Certificate(pem);
  return { subject: x.subject, issuer: x.issuer, key: x.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'), keyUsage: x.keyUsage, san: x.subjectAltName, ca: x.ca, days: Math.round((Date.parse(x.validTo) - Date.parse(x.validFrom)) / 86_400_000) };
};

describe('crypto on the worker pool', () => {
  let c: TestController;
  let admin: string;
  beforeAll(async () => {
    c = await startTestController({ config: { authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 } });
    admin = await c.login();
  });
  afterAll(() => c.close());

  it('hashes and checks passwords as the same code does in this thread', async () => {
    const id = await c.user('pool-user', { password: 'pool-pass-1' });
    const stored = await c.opened.ctx.store.db.selectFrom('authenticators').select('passwordHash').where('identityId', '=', id).executeTakeFirstOrThrow();
    // The suite hashes at a lower cost (vitest.config.ts); the hash names the cost it was made with.
    expect(stored.passwordHash).toMatch(new RegExp(`^scrypt\\$${2 ** hashCost()}\\$8\\$1\\$`));
    expect(cryptoTasks.verifyPassword('pool-pass-1', stored.passwordHash, hashCost())).toBe(true);
    expect(cryptoTasks.verifyPassword('pool-pass-2', stored.passwordHash, hashCost())).toBe(false);
    // A hash made in this thread at the default cost (what a controller stores) logs in through the workers.
    const strong = cryptoTasks.hashPassword('thread-pass-1', DEFAULT_HASH_COST);
    expect(strong).toMatch(/^scrypt\$32768\$8\$1\$/);
    await c.opened.ctx.store.db.updateTable('authenticators').set({ passwordHash: strong }).where('identityId', '=', id).execute();
    expect(await c.login('pool-user', 'thread-pass-1')).toBeTruthy();
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'pool-user', password: 'pool-pass-1' } }), 401, 'INVALID_AUTH');
  });

  it('signs a CSR into the certificate the same code makes in this thread, and refuses a bad one with 400', async () => {
    for (const [name, csr] of [['pool-ec', ecCsr('pool-ec')], ['pool-rsa', rsaCsr('pool-rsa')]] as const) {
      const { id, token } = await ottIdentity(c, admin, name);
      const r = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: csr.csrPem } });
      expect(r.status, r.text).toBe(200);
      const pki = c.opened.ctx.pki;
      const local = cryptoTasks.signCsr({ csrPem: csr.csrPem, commonName: id, issuerPem: pki.intermediatePem, issuerKeyPem: pki.intermediateKeyPem, days: 365, usage: 'client' });
      expect(shape(r.body.data.cert)).toEqual(shape(local.pem));
      expect(new X509Certificate(r.body.data.cert).verify(new X509Certificate(pki.intermediatePem).publicKey)).toBe(true);
    }
    const { token } = await ottIdentity(c, admin, 'pool-bad-csr');
    const bad = ecCsr('x').csrPem.replace(/\n[A-Za-z0-9+/]{20}/, '\nAAAAAAAAAAAAAAAAAAAA');
    const err = expectError(await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: bad } }), 400, 'COULD_NOT_PROCESS_CSR');
    expect(() => cryptoTasks.signCsr({ csrPem: bad, commonName: 'x', issuerPem: c.opened.ctx.pki.intermediatePem, issuerKeyPem: c.opened.ctx.pki.intermediateKeyPem, days: 1, usage: 'client' })).toThrow(ApiError);
    expect(err.message).toMatch(/certificate signing request/);
    // The token was not used up by the refused request.
    expect((await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: ecCsr('y').csrPem } })).status).toBe(200);
  });

  it('enrolls a burst of identities at once, every one', async () => {
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => ottIdentity(c, admin, `burst-${i}`)));
    const results = await Promise.all(ids.map(({ token }) => c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: ecCsr('burst').csrPem } })));
    expect(results.map((r) => r.status)).toEqual(ids.map(() => 200));
    const subjects = results.map((r) => new X509Certificate(r.body.data.cert).subject);
    expect(new Set(subjects).size).toBe(40);
    expect(subjects).toEqual(ids.map(({ id }) => expect.stringContaining(`CN=${id}`)));
  });
});

describe('a full crypto queue', () => {
  let c: TestController;
  beforeAll(async () => {
    // Nothing may wait: a login that finds every worker busy is refused at once.
    c = await startTestController({ config: { authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0, cryptoQueueLimit: 0 } });
  });
  afterAll(() => c.close());

  it('answers 429 SERVER_TOO_MANY_REQUESTS with the envelope, and serves again once the workers are free', async () => {
    // CSR signing goes straight to the pool (password checks are admitted by hash-slots.ts first).
    const admin = await c.login();
    const ids = await Promise.all(Array.from({ length: 16 }, (_, i) => ottIdentity(c, admin, `full-${i}`)));
    const burst = await Promise.all(ids.map(({ token }) => c.call('POST', `${CLIENT}/enroll/ott`, { body: { token, clientCsr: ecCsr('full').csrPem } })));
    const refused = burst.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(burst.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    for (const r of refused) {
      expect(expectError(r, 429, 'SERVER_TOO_MANY_REQUESTS').message).toMatch(/try again/);
      expect(r.headers['retry-after']).toBe('1');
    }
    // A refused enrollment did not use up its token: it succeeds once the workers are free.
    const again = ids[burst.indexOf(refused[0])];
    expect((await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: again.token, clientCsr: ecCsr('again').csrPem } })).status).toBe(200);
    expect(await c.login()).toBeTruthy();
  });
});
