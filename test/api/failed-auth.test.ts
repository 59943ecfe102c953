// Failed authentication made visible (ziti#1834, issue 47 item 6), against a controller over real TLS
// with its edge router and control port: refused logins by method and reason (events naming the address
// and, where known, the identity; ztc_logins_failed_total), refused enrollments
// (ztc_enrollments_failed_total), and failed TLS handshakes on the API, edge and control ports (`tls`
// events, ztc_tls_handshakes_failed_total). The client's answers say no more than before; no event
// carries a secret.
import net from 'node:net';
import tls from 'node:tls';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZtcEvent } from '../../src/model/events/types.js';
import { CLIENT, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let tc: TlsController;
let admin: string;
const heard: ZtcEvent[] = [];
beforeAll(async () => {
  tc = await startTlsController();
  admin = await tc.login();
  tc.running.ctx.events.subscribe((e) => heard.push(e));
}, 60_000);
afterAll(() => tc?.close());

const mg = async (method: string, path: string, body?: unknown) => (await tc.call(method, `${MGMT}${path}`, { token: admin, body })).body?.data;
const authenticate = (method: string, body: unknown, o: { bearer?: string } = {}) => tc.call('POST', `${CLIENT}/authenticate?method=${method}`, { body, ...o });
async function metric(name: string, labels: Record<string, string>) {
  const text = (await tc.call('GET', '/metrics', { token: admin, accept: 'text/plain' })).text;
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && want.every((w) => l.includes(w)));
  return line ? Number(line.split(' ').pop()) : 0;
}
const failures = () => heard.filter((e): e is Extract<ZtcEvent, { namespace: 'authentication' }> => e.namespace === 'authentication' && !e.success);
const lastFailure = () => failures().at(-1)!;

async function user(name: string) {
  const id = (await mg('POST', '/identities', { name, type: 'User', isAdmin: false })).id as string;
  await mg('POST', '/authenticators', { identityId: id, method: 'updb', username: name, password: 'password1' });
  return id;
}

describe('refused logins', () => {
  it('are events by method and reason, with the address and the identity when known; counted; the answer unchanged', async () => {
    const ana = await user('fa-ana');
    const cases: [string, () => Promise<{ status: number; body: any; text: string }>, string, string][] = [
      ['password', () => authenticate('password', { username: 'fa-nobody', password: 'password1' }), 'unknown-credential', ''],
      ['password', () => authenticate('password', { username: 'fa-ana', password: 'not-it' }), 'wrong-password', ana],
      ['password', () => authenticate('password', { username: 'fa-ana' }), 'invalid-request', ''],
      ['cert', () => authenticate('cert', {}), 'no-certificate', ''],
      ['ext-jwt', () => authenticate('ext-jwt', {}, { bearer: 'eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.' }), 'invalid-token', ''],
    ];
    for (const [method, call, reason, identity] of cases) {
      const before = await metric('ztc_logins_failed_total', { method, reason });
      const r = await call();
      expect(r.status, `${method} ${reason}`).toBeGreaterThanOrEqual(400);
      // The client learns nothing of why.
      expect(r.text).not.toContain(reason);
      expect(lastFailure(), `${method} ${reason}`).toMatchObject({ type: method === 'password' ? 'updb' : method, failure: reason, identity_id: identity, remote_address: '127.0.0.1' });
      expect(await metric('ztc_logins_failed_total', { method, reason })).toBe(before + 1);
    }
    expect(lastFailure().reason).toMatch(/^INVALID_AUTH/);
    // A disabled identity: its id, and why.
    expect((await tc.call('POST', `${MGMT}/identities/${ana}/disable`, { token: admin, body: { durationMinutes: 0 } })).status).toBe(200);
    const disabled = await authenticate('password', { username: 'fa-ana', password: 'password1' });
    expect(disabled.body.error.code).toBe('INVALID_AUTH');
    expect(lastFailure()).toMatchObject({ failure: 'identity-disabled', identity_id: ana, username: 'fa-ana' });
    // No password, nor anything the client sent but the username, in any event.
    expect(JSON.stringify(failures())).not.toMatch(/not-it|password1/);
    // In the audit, per identity, with why.
    await tc.running.ctx.events.flush();
    const audit = (await tc.call('GET', `${MGMT}/audit-events?types=authentication&entity=fa-ana`, { token: admin })).body.data as { failure?: string }[];
    // (Its username named it in the request that lacked a password too.)
    expect(audit.map((e) => e.failure).sort()).toEqual(['identity-disabled', 'invalid-request', 'wrong-password']);
  });

  it("counts a login's refused second factor as method mfa", async () => {
    const bo = await user('fa-bo');
    const token = (await authenticate('password', { username: 'fa-bo', password: 'password1' })).body.data.token as string;
    // Without MFA enrolled.
    expect((await tc.call('POST', `${CLIENT}/authenticate/mfa`, { token, body: { code: '123456' } })).status).toBe(401);
    expect(lastFailure()).toMatchObject({ type: 'mfa', failure: 'mfa-not-enrolled', identity_id: bo });
    // Enrolled, a wrong code.
    expect((await tc.call('POST', `${CLIENT}/current-identity/mfa`, { token })).status).toBe(201);
    const url = (await tc.call('GET', `${CLIENT}/current-identity/mfa`, { token })).body.data.provisioningUrl as string;
    const secret = new URL(url).searchParams.get('secret')!;
    const code = await generate({ secret, epoch: Math.floor(tc.clock.now().getTime() / 1000) });
    expect((await tc.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token, body: { code } })).status).toBe(200);
    tc.clock.advance(30_000);
    const next = (await authenticate('password', { username: 'fa-bo', password: 'password1' })).body.data.token as string;
    const right = await generate({ secret, epoch: Math.floor(tc.clock.now().getTime() / 1000) });
    const wrong = right === '000000' ? '111111' : '000000';
    const before = await metric('ztc_logins_failed_total', { method: 'mfa', reason: 'wrong-mfa-code' });
    expect((await tc.call('POST', `${CLIENT}/authenticate/mfa`, { token: next, body: { code: wrong } })).status).toBe(401);
    expect(lastFailure()).toMatchObject({ type: 'mfa', failure: 'wrong-mfa-code', identity_id: bo, remote_address: '127.0.0.1' });
    expect(JSON.stringify(lastFailure())).not.toContain(wrong);
    expect(await metric('ztc_logins_failed_total', { method: 'mfa', reason: 'wrong-mfa-code' })).toBe(before + 1);
  });
});

describe('refused enrollments', () => {
  it('are counted by method and error code', async () => {
    const before = await metric('ztc_enrollments_failed_total', { method: 'ott', reason: 'INVALID_ENROLLMENT_TOKEN' });
    const r = await tc.call('POST', `${CLIENT}/enroll/ott`, { body: { token: 'not-a-token', clientCsr: 'x' } });
    expect(r.status).toBeGreaterThanOrEqual(400);
    // Told once the answer is sent (server/enrollment-events.ts: an onResponse hook).
    const enrollmentFailure = () => heard.filter((e) => e.namespace === 'enrollment').at(-1) as Extract<ZtcEvent, { namespace: 'enrollment' }> | undefined;
    await expect.poll(enrollmentFailure, { timeout: 3000 }).toMatchObject({ event_type: 'fail', method: 'ott', remote_address: '127.0.0.1' });
    const event = enrollmentFailure()!;
    const code = /^([A-Z_]+):/.exec(event.reason)![1];
    expect(await metric('ztc_enrollments_failed_total', { method: 'ott', reason: code })).toBe((code === 'INVALID_ENROLLMENT_TOKEN' ? before : 0) + 1);
    expect(JSON.stringify(event)).not.toContain('not-a-token');
  });
});

/** Bytes that are not TLS, to a TLS port: the handshake fails at once. */
function notTls(port: number) {
  return new Promise<void>((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    s.on('close', () => resolve());
    s.on('error', () => resolve());
  });
}
/** A client offering only a cipher the controller does not take (CBC, TLS 1.2). */
function oldCipher(port: number) {
  return new Promise<void>((resolve) => {
    const s = tls.connect({ port, host: '127.0.0.1', servername: 'localhost', rejectUnauthorized: false, maxVersion: 'TLSv1.2', ciphers: 'AES128-SHA' });
    s.on('error', () => resolve());
    s.on('secureConnect', () => {
      s.destroy();
      resolve();
    });
  });
}
/** A client that completes TLS without a certificate. */
function noCertificate(port: number) {
  return new Promise<void>((resolve) => {
    const s = tls.connect({ port, host: '127.0.0.1', servername: 'localhost', rejectUnauthorized: false });
    s.on('error', () => resolve());
    s.on('close', () => resolve());
  });
}
const tlsEvents = (listener: string) => heard.filter((e): e is Extract<ZtcEvent, { namespace: 'tls' }> => e.namespace === 'tls' && e.listener === listener);

describe('failed TLS handshakes', () => {
  it('on the API port: an event with the address and why, and the counter', async () => {
    const port = tc.running.ctx.config.port;
    const before = await metric('ztc_tls_handshakes_failed_total', { listener: 'api', reason: 'not-tls' });
    await notTls(port);
    await expect.poll(() => tlsEvents('api').find((e) => e.reason === 'not-tls'), { timeout: 3000 }).toMatchObject({ event_type: 'handshake-failed', remote_address: expect.stringMatching(/127\.0\.0\.1/), count: 1 });
    expect(await metric('ztc_tls_handshakes_failed_total', { listener: 'api', reason: 'not-tls' })).toBe(before + 1);
    await oldCipher(port);
    await expect.poll(() => tlsEvents('api').find((e) => e.reason === 'no-common-protocol'), { timeout: 3000 }).toMatchObject({ error: expect.stringMatching(/CIPHER/), remote_address: '127.0.0.1' });
  });

  it('on the edge and control ports (the data plane tells them): refused certificates too', async () => {
    const edge = tc.running.fabric!.edge!.port;
    const ctrl = tc.running.fabric!.ctrlPort!;
    await notTls(edge);
    await noCertificate(edge);
    await notTls(ctrl);
    await noCertificate(ctrl);
    for (const listener of ['edge', 'ctrl']) {
      await expect.poll(() => tlsEvents(listener).map((e) => e.reason).sort(), { timeout: 5000 }).toEqual(['not-tls', 'refused-certificate']);
      expect(tlsEvents(listener).map((e) => e.remote_address)).toEqual(['127.0.0.1', '127.0.0.1']);
    }
    // The data plane's counts reach the metric with its events.
    expect(await metric('ztc_tls_handshakes_failed_total', { listener: 'edge', reason: 'refused-certificate' })).toBe(1);
    expect(await metric('ztc_tls_handshakes_failed_total', { listener: 'ctrl', reason: 'not-tls' })).toBe(1);
  });

  it('a flood from one address is told in at most two events (the first at once, the rest folded with their count); the counter counts each', async () => {
    const port = tc.running.ctx.config.port;
    const before = await metric('ztc_tls_handshakes_failed_total', { listener: 'api', reason: 'not-tls' });
    const told = tlsEvents('api').filter((e) => e.reason === 'not-tls').length;
    for (let i = 0; i < 5; i++) await notTls(port);
    // Folded until the window ends (10 s after the address's last event was told).
    const fresh = () => tlsEvents('api').filter((e) => e.reason === 'not-tls').slice(told);
    await expect.poll(() => fresh().reduce((n, e) => n + e.count, 0), { timeout: 25_000, interval: 250 }).toBe(5);
    expect(fresh().length).toBeLessThanOrEqual(2);
    expect(fresh().at(-1)!.count).toBeGreaterThanOrEqual(4);
    expect(await metric('ztc_tls_handshakes_failed_total', { listener: 'api', reason: 'not-tls' })).toBe(before + 5);
  }, 40_000);
});
