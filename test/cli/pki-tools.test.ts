// `ztc pki create-ca` and `ztc pki verification-cert`: a third-party CA tried end to end without
// openssl, through the built CLI on a local data dir: the CA verifies and its certificates are trusted.
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliRunner } from '../helpers/cli.js';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const { ztc, home, useDb, cleanup } = cliRunner();

describe('ztc pki create-ca and verification-cert', { timeout: 120_000 }, () => {
  const dir = tempDataDir();
  const out = path.join(home, 'certs');
  beforeAll(async () => useDb(await testDatabase()));
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    cleanup();
  });

  it('makes a CA that ztc ca verify accepts with the verification certificate it signs', async () => {
    const made = await ztc('pki', 'create-ca', 'partner-ca', '--out-dir', out);
    expect(made.stderr).toBe('');
    expect(made.stdout).toMatch(/next: ztc ca create partner-ca --cert-pem @.*partner-ca\.pem/);
    const caFile = path.join(out, 'partner-ca.pem');
    expect(fs.statSync(path.join(out, 'partner-ca.key')).mode & 0o777).toBe(0o600);
    const ca = new X509Certificate(fs.readFileSync(caFile));
    expect(ca.ca).toBe(true);
    expect(ca.subject).toMatch(/CN=partner-ca/);

    expect((await ztc('ca', 'create', 'partner', '--cert-pem', `@${caFile}`, '--is-auth-enabled', '-d', dir)).code).toBe(0);
    const token = JSON.parse((await ztc('ca', 'get', 'partner', '-o', 'json', '-d', dir)).stdout).verificationToken as string;
    const verifyFile = path.join(out, 'verify.pem');
    const signed = await ztc('pki', 'verification-cert', '--ca', caFile, '--token', token, '--out', verifyFile);
    expect(signed.stderr).toBe('');
    const leaf = new X509Certificate(fs.readFileSync(verifyFile));
    expect(leaf.subject).toMatch(new RegExp(`CN=${token}`));
    expect(leaf.verify(ca.publicKey)).toBe(true);
    const verified = await ztc('ca', 'verify', 'partner', '--cert', verifyFile, '-d', dir);
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse((await ztc('ca', 'get', 'partner', '-o', 'json', '-d', dir)).stdout).isVerified).toBe(true);
  });

  it('says what is wrong: files that exist, a key of another CA, a missing file', async () => {
    const again = await ztc('pki', 'create-ca', 'partner-ca', '--out-dir', out);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exist.*--force/);
    expect((await ztc('pki', 'create-ca', 'other-ca', '--out-dir', out)).code).toBe(0);
    const mismatch = await ztc('pki', 'verification-cert', '--ca', path.join(out, 'partner-ca.pem'), '--ca-key', path.join(out, 'other-ca.key'), '--token', 'abc', '--out', path.join(out, 'x.pem'));
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toMatch(/other-ca\.key is not the key of .*partner-ca\.pem/);
    const missing = await ztc('pki', 'verification-cert', '--ca', path.join(out, 'nope.pem'), '--token', 'abc');
    expect(missing.stderr).toMatch(/cannot read the CA certificate .*nope\.pem: no such file/);
    const noToken = await ztc('pki', 'verification-cert', '--ca', path.join(out, 'partner-ca.pem'));
    expect(noToken.stderr).toMatch(/--token/);
    const days = await ztc('pki', 'create-ca', 'x', '--days', 'soon', '--out-dir', out);
    expect(days.stderr).toMatch(/--days: expected a whole number/);
  });
});
