// `ztc login` the ways upstream's CLI does: a password with MFA (TOTP or recovery code), a client
// certificate and key, an identity file from `ztc enroll`, and an external JWT. Through the built
// program against a listening controller.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { vouchedFor } from '../../src/cli/commands/session.js';
import { cliRunner } from '../helpers/cli.js';
import { TestCa } from '../helpers/certs.js';
import { ADMIN, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const { ztc, home, cleanup } = cliRunner();
const file = (name: string) => path.join(home, name);
const profiles = () => JSON.parse(fs.readFileSync(file('profiles.json'), 'utf8'));

describe('ztc login', { timeout: 180_000 }, () => {
  let running: Running;
  let jwks: http.Server;
  const keys: JWK[] = [];
  beforeAll(async () => {
    // The key set is served on loopback: allowed explicitly, as an operator would (jwksPrivateHosts).
    running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase(), jwksPrivateHosts: ['127.0.0.1'] }));
    jwks = http.createServer((_req, res) => res.end(JSON.stringify({ keys })));
    await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
    const r = await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes', '--profile', 'admin');
    expect(r.code, r.stderr).toBe(0);
  });
  afterAll(async () => {
    jwks.close();
    await running.close();
    cleanup();
  });

  it('a updb identity: create names the username, enroll sets the password, login needs the MFA code once MFA is on', async () => {
    const made = await ztc('identity', 'create', 'ops', '--is-admin', '--enroll', 'updb', '--username', 'ops.user', '--jwt-output-file', file('ops.jwt'));
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/updb enrollment for username 'ops.user': JWT written to .*ops\.jwt/);
    expect(made.stdout).toMatch(/next: ztc enroll .*ops\.jwt; then log in with: ztc login URL -u ops\.user/);
    expect(fs.statSync(file('ops.jwt')).mode & 0o777).toBe(0o600);
    // Not a terminal and no password: says how to give one, and changes nothing.
    const noPassword = await ztc('enroll', file('ops.jwt'));
    expect(noPassword.code).toBe(1);
    expect(noPassword.stderr).toMatch(/pass --password \(or ZTC_PASSWORD\), or run in a terminal to be asked/);
    expect((await ztc('enroll', file('ops.jwt'), '--password', 'ops-pass-123')).code).toBe(0);

    expect((await ztc('login', running.url, '-u', 'ops.user', '-p', 'ops-pass-123', '--yes', '--profile', 'ops')).code).toBe(0);
    const enabled = await ztc('mfa', 'enable', '--profile', 'ops', '--qr', file('mfa.png'));
    expect(enabled.code, enabled.stderr).toBe(0);
    // The QR code drawn with block characters, the URL to type by hand, and the recovery codes.
    expect(enabled.stdout.split('\n').filter((l) => /^[ █▀▄]{20,}$/.test(l)).length).toBeGreaterThan(10);
    const provisioningUrl = enabled.stdout.match(/otpauth:\/\/totp\/\S+/)![0];
    const recoveryCodes = enabled.stdout.match(/Recovery codes.*\n\s+(.*)/)![1].split(' ');
    expect(recoveryCodes).toHaveLength(20);
    expect(fs.readFileSync(file('mfa.png')).subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    const secret = new URL(provisioningUrl).searchParams.get('secret')!;
    expect((await ztc('mfa', 'verify', await generate({ secret }), '--profile', 'ops')).code).toBe(0);

    const asked = await ztc('login', running.url, '-u', 'ops.user', '-p', 'ops-pass-123', '--yes', '--profile', 'ops-mfa');
    expect(asked.code).toBe(1);
    expect(asked.stderr).toMatch(/This identity needs MFA: pass --mfa-code CODE/);
    expect(profiles().profiles['ops-mfa']).toBeUndefined();
    const wrong = await ztc('login', running.url, '-u', 'ops.user', '-p', 'ops-pass-123', '--yes', '--profile', 'ops-mfa', '--mfa-code', '000000');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/MFA failed: .*recovery codes/);

    const totp = await ztc('login', running.url, '-u', 'ops.user', '-p', 'ops-pass-123', '--yes', '--profile', 'ops-mfa', '--mfa-code', await generate({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }));
    expect(totp.code, totp.stderr).toBe(0);
    expect((await ztc('identity', 'get', 'ops', '--profile', 'ops-mfa')).code).toBe(0);
    const recovery = await ztc('login', running.url, '-u', 'ops.user', '-p', 'ops-pass-123', '--yes', '--profile', 'ops-recovery', '--mfa-code', recoveryCodes[0]);
    expect(recovery.code, recovery.stderr).toBe(0);
    expect((await ztc('identity', 'get', 'ops', '--profile', 'ops-recovery')).code).toBe(0);
    // Its session ended, the hint to log in again asks for the MFA code too.
    await running.app.inject({ method: 'DELETE', url: '/edge/management/v1/current-api-session', headers: { 'zt-session': profiles().profiles['ops-recovery'].token as string } });
    const ended = await ztc('identity', 'get', 'ops', '--profile', 'ops-recovery');
    expect(ended.code).toBe(1);
    expect(ended.stderr).toMatch(/log in again: ztc login https:\S+ -u ops\.user --mfa-code CODE --profile ops-recovery/);
    // A recovery code is good once.
    const again = await ztc('login', running.url, '-u', 'ops.user', '-p', 'ops-pass-123', '--yes', '--profile', 'ops-recovery', '--mfa-code', recoveryCodes[0]);
    expect(again.code).toBe(1);
  });

  it('an identity file from ztc enroll, or its certificate and key, logs in; the hint says how to log in again', async () => {
    const made = await ztc('identity', 'create', 'robot', '--is-admin', '-o', file('robot.jwt'), '--profile', 'admin');
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/ott enrollment: JWT written to/);
    expect((await ztc('enroll', file('robot.jwt'), '--out', file('robot.json'))).code).toBe(0);

    const r = await ztc('login', '--identity', file('robot.json'), '--profile', 'robot');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^logged in to https:\/\/\S+ as robot \(profile robot\)$/m);
    const listed = await ztc('identity', 'list', 'name = "robot"', '--profile', 'robot', '-o', 'json');
    expect(JSON.parse(listed.stdout).map((i: { name: string }) => i.name)).toEqual(['robot']);
    expect(profiles().profiles.robot.relogin).toBe(`ztc login --identity ${file('robot.json')}`);

    const id = JSON.parse(fs.readFileSync(file('robot.json'), 'utf8')).id as { cert: string; key: string };
    fs.writeFileSync(file('robot.crt'), id.cert.slice(4));
    fs.writeFileSync(file('robot.key'), id.key.slice(4), { mode: 0o600 });
    const pair = await ztc('login', running.url, '--cert', file('robot.crt'), '--key', file('robot.key'), '--yes', '--profile', 'robot-pair');
    expect(pair.code, pair.stderr).toBe(0);
    const token = profiles().profiles['robot-pair'].token as string;
    await running.app.inject({ method: 'DELETE', url: `${MGMT}/current-api-session`, headers: { 'zt-session': token } });
    const expired = await ztc('identity', 'list', '--profile', 'robot-pair');
    expect(expired.code).toBe(1);
    expect(expired.stderr).toMatch(/session expired .*: ztc login https:\S+ --cert \S+robot\.crt --key \S+robot\.key --profile robot-pair/);

    expect((await ztc('login', running.url, '--cert', file('robot.crt'), '--yes')).stderr).toMatch(/--cert and --key go together/);
    expect((await ztc('login', '--identity', file('robot.jwt'))).stderr).toMatch(/is not an identity file/);
    expect((await ztc('login')).stderr).toMatch(/Which controller\?/);
  });

  it('trusts the CA it pinned at the next login without asking; a changed CA is refused unless confirmed', async () => {
    // After a logout (or an idle timeout) the profile keeps its pin: logging in again needs no --yes.
    expect((await ztc('logout', '--profile', 'admin')).code).toBe(0);
    const again = await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--profile', 'admin');
    expect(again.code, again.stderr).toBe(0);
    // A second profile for the same controller trusts what the first pinned.
    const second = await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--profile', 'admin-2');
    expect(second.code, second.stderr).toBe(0);
    expect(profiles().profiles['admin-2'].caPem).toBe(profiles().profiles.admin.caPem);

    // A pin the controller no longer proves itself with (its PKI made anew, or someone in its place):
    // said as a change, with the fingerprint to compare, and nothing saved without --yes.
    const store = fs.readFileSync(file('profiles.json'), 'utf8');
    const other = new TestCa('another controller');
    const data = JSON.parse(store);
    for (const name of Object.keys(data.profiles)) if (data.profiles[name].url === running.url) data.profiles[name].caPem = other.pem;
    fs.writeFileSync(file('profiles.json'), JSON.stringify(data), { mode: 0o600 });
    const changed = await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--profile', 'admin');
    expect(changed.code).toBe(1);
    expect(changed.stderr).toMatch(/no longer proves itself with the CA saved for it: it now presents CA '.+' \(SHA-256 ([0-9a-f]{2}:){31}[0-9a-f]{2}\).*banner.*pass --yes/s);
    expect(profiles().profiles.admin.caPem).toBe(other.pem);
    const confirmed = await ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--profile', 'admin', '--yes');
    expect(confirmed.code, confirmed.stderr).toBe(0);
    expect(confirmed.stderr).toMatch(/warning: .*no longer proves itself.*Trusted as --yes asks/s);
    expect(profiles().profiles.admin.caPem).toBe(running.ctx.pki.caBundlePem);
    expect((await ztc('identity', 'list', '--profile', 'admin')).code).toBe(0);
    fs.writeFileSync(file('profiles.json'), store, { mode: 0o600 });
  });

  it('pins only what the confirmed root vouches for, not what an unverified answer put beside it', () => {
    const chain = running.ctx.pki.caBundlePem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g)!;
    const root = chain[chain.length - 1];
    const intruder = new TestCa('intruder');
    // Another CA, and a CA certificate the intruder signed, beside the controller's real chain.
    const posing = intruder.issue('ztc intermediate').certPem;
    expect(vouchedFor(root, [intruder.pem, posing, ...chain])).toEqual(chain);
    expect(vouchedFor(root, [root])).toEqual([root]);
  });

  it('an external JWT from a configured signer logs in', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    keys.push({ ...(await exportJWK(publicKey)), kid: 'idp-1', alg: 'RS256', use: 'sig' });
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as { port: number }).port}/jwks.json`;
    const signer = await ztc('external-jwt-signer', 'create', 'idp', '--issuer', 'https://idp.example', '--audience', 'ztc', '--jwks-endpoint', jwksUrl,
      '--enabled', '--use-external-id', '--claims-property', 'email', '--profile', 'admin');
    expect(signer.code, signer.stderr).toBe(0);
    expect((await ztc('identity', 'create', 'sso-admin', '--is-admin', '--external-id', 'ana@example.com', '--enroll', 'none', '--profile', 'admin')).code).toBe(0);
    const token = await new SignJWT({ email: 'ana@example.com' }).setProtectedHeader({ alg: 'RS256', kid: 'idp-1' }).setIssuer('https://idp.example').setAudience('ztc')
      .setIssuedAt().setExpirationTime('10m').sign(privateKey);
    const r = await ztc('login', running.url, '--ext-jwt', token, '--yes', '--profile', 'sso');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/as sso-admin \(profile sso\)/);
    expect((await ztc('identity', 'get', 'sso-admin', '--profile', 'sso')).code).toBe(0);
    const bad = await ztc('login', running.url, '--ext-jwt', 'not-a-jwt', '--yes', '--profile', 'sso-bad');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/Login failed/);
  });
});
