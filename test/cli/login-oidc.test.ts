// `ztc login` through the controller's OIDC provider when /version offers it (as upstream's CLI since
// 2.0), the legacy login otherwise or with --legacy, --token for a token one holds, and the renewal of
// an expiring access token with its (single-use) refresh token. Through the built program.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { cliRunner } from '../helpers/cli.js';
import { ADMIN, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const { ztc, home, cleanup } = cliRunner();
const profiles = () => JSON.parse(fs.readFileSync(path.join(home, 'profiles.json'), 'utf8'));
const isJwt = (t: string) => /^ey[\w-]*\.[\w-]+\.[\w-]+$/.test(t);

describe('ztc login and OIDC', { timeout: 180_000 }, () => {
  let on: Running;
  let off: Running;
  beforeAll(async () => {
    on = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
    off = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase(), oidc: false }));
  });
  afterAll(async () => {
    await on.close();
    await off.close();
    cleanup();
  });

  it('logs in through /oidc when offered: the profile holds the access and refresh tokens, renewed when about to expire', async () => {
    const r = await ztc('login', on.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes', '--profile', 'oidc');
    expect(r.code, r.stderr).toBe(0);
    const p = profiles().profiles.oidc;
    expect(isJwt(p.token)).toBe(true);
    expect(isJwt(p.refreshToken)).toBe(true);
    expect(Date.parse(p.expiresAt)).toBeGreaterThan(Date.now() + 25 * 60_000);
    const list = await ztc('identity', 'list', '--profile', 'oidc');
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/Default Admin/);

    // About to expire: the next command renews it first (and the spent refresh token is replaced).
    const all = profiles();
    all.profiles.oidc.expiresAt = new Date(Date.now() + 10_000).toISOString();
    fs.writeFileSync(path.join(home, 'profiles.json'), JSON.stringify(all));
    expect((await ztc('identity', 'list', '--profile', 'oidc')).code).toBe(0);
    const renewed = profiles().profiles.oidc;
    expect(renewed.token).not.toBe(p.token);
    expect(renewed.refreshToken).not.toBe(p.refreshToken);

    // --token: the access token one holds, saved as it is.
    const t = await ztc('login', on.url, '--token', renewed.token, '--profile', 'held');
    expect(t.code, t.stderr).toBe(0);
    expect(profiles().profiles.held.token).toBe(renewed.token);
    expect((await ztc('identity', 'list', '--profile', 'held')).code).toBe(0);

    // Logout ends the JWT session: the token held elsewhere stops working too.
    expect((await ztc('logout', '--profile', 'oidc')).code).toBe(0);
    const after = await ztc('identity', 'list', '--profile', 'held');
    expect(after.code).not.toBe(0);
  });

  it('logs in the legacy way with --legacy, or when the controller does not offer OIDC', async () => {
    const legacy = await ztc('login', on.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes', '--legacy', '--profile', 'legacy');
    expect(legacy.code, legacy.stderr).toBe(0);
    expect(isJwt(profiles().profiles.legacy.token)).toBe(false);
    const plain = await ztc('login', off.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes', '--profile', 'plain');
    expect(plain.code, plain.stderr).toBe(0);
    expect(isJwt(profiles().profiles.plain.token)).toBe(false);
    expect(profiles().profiles.plain.refreshToken).toBeUndefined();
    expect((await ztc('identity', 'list', '--profile', 'plain')).code).toBe(0);
    // A wrong password through OIDC says what the legacy login says.
    const wrong = await ztc('login', on.url, '-u', ADMIN.username, '-p', 'nope-nope', '--yes', '--profile', 'wrong');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/refused username 'admin' with that password/);
  });
});
