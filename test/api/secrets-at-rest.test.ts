// Secrets are not readable at rest or in logs: after logins, MFA, enrollments, ext-jwt, sessions and a
// snapshot, every secret the scenario used is looked for in every row of every table, in the raw
// database files, in every file of the data dir and in the captured log; none may appear in clear.
import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { importPKCS8, SignJWT } from 'jose';
import { sql } from 'kysely';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/model/clock.js';
import { buildApp, type App } from '../../src/server/app.js';
import { openDataDir, type Opened } from '../../src/server/controller.js';
import { loggerOptions } from '../../src/server/logging.js';
import { ecCsr, selfSignedCert } from '../helpers/certs.js';
import { ADMIN, CLIENT, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

let app: App;
let opened: Opened;
let dir: string;
let log = '';
const clock = new ManualClock();
beforeAll(async () => {
  dir = tempDataDir();
  opened = await openDataDir(testConfig(dir, { db: await testDatabase() }), { clock });
  const stream = new PassThrough();
  stream.on('data', (d: Buffer) => (log += d.toString()));
  app = await buildApp(opened.ctx, { logger: loggerOptions('trace', stream) });
});
afterAll(async () => {
  await app.close();
  await opened.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function call(method: string, url: string, o: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await app.inject({
    method: method as 'GET', url,
    headers: { ...(o.token ? { 'zt-session': o.token } : {}), ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers },
    ...(o.body !== undefined ? { payload: JSON.stringify(o.body) } : {}),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

describe('secrets at rest and in logs', () => {
  it('are nowhere in clear after a full scenario', async () => {
    const secrets: Record<string, string> = { 'admin password': ADMIN.password };
    const login = async (username: string, password: string) => {
      const r = await call('POST', `${CLIENT}/authenticate?method=password`, { body: { username, password } });
      expect(r.status).toBe(200);
      secrets[`API session token of ${username} #${Object.keys(secrets).length}`] = r.body.data.token;
      return r.body.data.token as string;
    };
    const admin = await login(ADMIN.username, ADMIN.password);

    // A user with a password and MFA.
    const user = (await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'secret-user', type: 'User', isAdmin: false, roleAttributes: ['s'] } })).body.data.id;
    secrets['user password'] = 'user-pass-Zq7';
    expect((await call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: user, method: 'updb', username: 'secret-user', password: secrets['user password'] } })).status).toBe(201);
    const userToken = await login('secret-user', secrets['user password']);
    await call('POST', `${CLIENT}/current-identity/mfa`, { token: userToken });
    const mfa = (await call('GET', `${CLIENT}/current-identity/mfa`, { token: userToken })).body.data;
    secrets['TOTP secret'] = new URL(mfa.provisioningUrl).searchParams.get('secret')!;
    (mfa.recoveryCodes as string[]).forEach((code, i) => (secrets[`recovery code ${i}`] = code));
    const code = await generate({ secret: secrets['TOTP secret'], epoch: clock.now().getTime() / 1000 });
    expect((await call('POST', `${CLIENT}/current-identity/mfa/verify`, { token: userToken, body: { code } })).status).toBe(200);
    clock.advance(31_000);
    const viewed = await call('GET', `${CLIENT}/current-identity/mfa/recovery-codes`, { token: userToken, headers: { 'mfa-validation-code': await generate({ secret: secrets['TOTP secret'], epoch: clock.now().getTime() / 1000 }) } });
    expect(viewed.status).toBe(200);

    // Enrollments: one used (through the query-string form), one left outstanding, and a router's.
    const device = (await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'secret-device', type: 'Device', isAdmin: false, enrollment: { ott: true } } })).body.data.id;
    const used = (await call('GET', `${MGMT}/identities/${device}`, { token: admin })).body.data.enrollment.ott;
    secrets['used enrollment JWT'] = used.jwt;
    secrets['used enrollment token'] = used.token;
    const { csrPem, keyPem } = ecCsr('secret-device');
    secrets['client private key'] = keyPem.split('\n').slice(1, 3).join('\n');
    const enrolled = await app.inject({ method: 'POST', url: `${CLIENT}/enroll?method=ott&token=${used.token}`, headers: { 'content-type': 'application/x-pem-file' }, payload: csrPem });
    expect(enrolled.statusCode).toBe(200);
    const waiting = (await call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'secret-waiting', type: 'Device', isAdmin: false, enrollment: { ott: true } } })).body.data.id;
    const outstanding = (await call('GET', `${MGMT}/identities/${waiting}`, { token: admin })).body.data.enrollment.ott;
    secrets['outstanding enrollment JWT'] = outstanding.jwt;
    secrets['outstanding enrollment token'] = outstanding.token;
    const router = (await call('POST', `${MGMT}/edge-routers`, { token: admin, body: { name: 'secret-router' } })).body.data.id;
    secrets['router enrollment token'] = (await call('GET', `${MGMT}/edge-routers/${router}`, { token: admin })).body.data.enrollmentToken;

    // ext-jwt login with a signer's certificate.
    const signer = selfSignedCert('idp', { bits: 2048 });
    expect((await call('POST', `${MGMT}/external-jwt-signers`, { token: admin, body: { name: 'idp', enabled: true, issuer: 'https://idp.example', audience: 'ztc', certPem: signer.certPem, kid: 'idp-1', claimsProperty: 'sub' } })).status).toBe(201);
    const now = Math.floor(clock.now().getTime() / 1000);
    const bearer = await new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: 'idp-1' }).setIssuer('https://idp.example').setAudience('ztc').setSubject(device).setIssuedAt(now).setExpirationTime(now + 600).sign(await importPKCS8(forgeToPkcs8(signer.keyPem), 'RS256'));
    secrets['ext-jwt bearer token'] = bearer;
    const ext = await call('POST', `${CLIENT}/authenticate?method=ext-jwt`, { headers: { authorization: `Bearer ${bearer}` }, body: {} });
    expect(ext.status, JSON.stringify(ext.body)).toBe(200);
    secrets['ext-jwt API session token'] = ext.body.data.token;

    // A Dial session, a terminator with an identity secret, a snapshot.
    const svc = (await call('POST', `${MGMT}/services`, { token: admin, body: { name: 'secret-svc', encryptionRequired: true, roleAttributes: ['s'] } })).body.data.id;
    await call('POST', `${MGMT}/service-policies`, { token: admin, body: { name: 'secret-sp', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#s'], serviceRoles: ['#s'] } });
    const userAgain = await login('secret-user', secrets['user password']);
    clock.advance(31_000);
    await call('POST', `${CLIENT}/authenticate/mfa`, { token: userAgain, body: { code: await generate({ secret: secrets['TOTP secret'], epoch: clock.now().getTime() / 1000 }) } });
    const session = await call('POST', `${CLIENT}/sessions`, { token: userAgain, body: { serviceId: svc } });
    expect(session.status, JSON.stringify(session.body)).toBe(201);
    secrets['session token'] = session.body.data.token;
    secrets['terminator identity secret'] = Buffer.from('terminator-secret-value').toString('base64');
    await call('POST', `${MGMT}/terminators`, { token: admin, body: { service: svc, router, binding: 'transport', address: 'tcp:x:1', identity: 'h', identitySecret: secrets['terminator identity secret'] } });
    expect((await call('POST', `${MGMT}/database/snapshot`, { token: admin })).status).toBe(200);
    // Filters that name secrets (docs/filters.md shows `token = "..."`): the literal never reaches the log.
    for (const [path, secret] of [
      [`${MGMT}/sessions`, secrets['session token']],
      [`${MGMT}/api-sessions`, secrets['ext-jwt API session token']],
      [`${MGMT}/enrollments`, secrets['outstanding enrollment token']],
      [`${CLIENT}/sessions`, secrets['session token']],
    ]) {
      expect((await call('GET', `${path}?filter=${encodeURIComponent(`token = "${secret}"`)}`, { token: admin })).status).toBeLessThan(500);
    }

    // Every row of every table, as text.
    const db = opened.ctx.store.db;
    let rows = '';
    for (const t of await db.introspection.getTables()) rows += JSON.stringify((await sql`select * from ${sql.table(t.name)}`.execute(db)).rows);
    // Every file of the data dir but the private keys the controller must hold (checked for mode below).
    const files: Record<string, string> = {};
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (!/\.key$|secrets\.key$/.test(e.name)) files[path.relative(dir, p)] = fs.readFileSync(p).toString('latin1');
      }
    };
    walk(dir);
    expect(Object.keys(files)).toEqual(expect.arrayContaining(['pki/root.pem']));
    if (!opened.ctx.store.file) expect(rows.length).toBeGreaterThan(1000);
    else expect(Object.keys(files).some((f) => f.startsWith('snapshots/'))).toBe(true);
    expect(log.length).toBeGreaterThan(1000);

    const found: string[] = [];
    for (const [what, secret] of Object.entries(secrets)) {
      expect(secret.length, what).toBeGreaterThanOrEqual(6);
      if (rows.includes(secret)) found.push(`${what} in the database rows`);
      for (const [file, content] of Object.entries(files)) if (content.includes(secret)) found.push(`${what} in ${file}`);
      if (log.includes(secret)) found.push(`${what} in the log`);
    }
    expect(found).toEqual([]);

    // What must stay on disk is readable by the owner only.
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of fs.readdirSync(path.join(dir, 'pki')).filter((n) => n.endsWith('.key'))) expect(fs.statSync(path.join(dir, 'pki', f)).mode & 0o777, f).toBe(0o600);
    if (opened.ctx.store.file) expect(fs.statSync(opened.ctx.store.file).mode & 0o777).toBe(0o600);
  }, 60_000);
});

/** node-forge writes PKCS#1 ("RSA PRIVATE KEY"); jose imports PKCS#8. */
const forgeToPkcs8 = (pem: string) => createPrivateKey(pem).export({ type: 'pkcs8', format: 'pem' }).toString();
