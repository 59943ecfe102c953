// The built CLI's `ztc pki status` and `ztc status`, on a local data dir.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliRunner } from '../helpers/cli.js';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const { ztc, useDb, cleanup } = cliRunner();

describe('ztc pki status and ztc status', { timeout: 120_000 }, () => {
  const dir = tempDataDir();
  beforeAll(async () => {
    useDb(await testDatabase());
    expect((await ztc('edge-router', 'create', 'er-1', '-d', dir)).code).toBe(0);
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    cleanup();
  });

  it('lists every certificate with days left, as a table and as JSON', async () => {
    const t = await ztc('pki', 'status', '-d', dir);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/^KIND\s+NAME\s+NOT AFTER\s+DAYS LEFT\s+RENEWS\s+FINGERPRINT/m);
    // The root is never replaced by itself; the others renew when a third of their lifetime is left.
    expect(t.stdout).toMatch(/^root\s+root CA\s+\S+\s+\d+\s+never \(by itself\)\s+([0-9a-f]{2}:){31}[0-9a-f]{2}$/m);
    expect(t.stdout).toMatch(/^server\s+server\s+\S+\s+36\d\s+at \d{4}-\S+Z\s+/m);
    expect(t.stdout).toMatch(/^intermediate\s+intermediate CA\s+\S+\s+\d+\s+at \d{4}-\S+Z\s+/m);
    // The server certificate's key (it signs every JWT): its expiry, and its renewal.
    expect(t.stdout).toMatch(/^signer\s+signer\s+\S+\s+36\d\s+at \d{4}-\S+Z\s+/m);
    const j = await ztc('pki', 'status', '-d', dir, '-o', 'json', '--expiring', '400');
    const body = JSON.parse(j.stdout);
    expect(body.certificates.map((c: { kind: string }) => c.kind)).toEqual(['server', 'signer']);
    expect(body.warnings).toEqual([]);
    const bad = await ztc('pki', 'status', '-d', dir, '--expiring', 'soon');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--expiring/);
  });

  it('shows the controller\'s version and the health of its certificates', async () => {
    const s = await ztc('status', '-d', dir);
    expect(s.code).toBe(0);
    expect(s.stdout).toMatch(/^controller\s+v\d/m);
    expect(s.stdout).toMatch(/^intermediate\s+\d+ days left/m);
    expect(s.stdout).toMatch(/^health\s+ok$/m);
    // The root's fingerprint in the one form the login prompt and the serve banner use too.
    const root = JSON.parse((await ztc('pki', 'status', '--own', '-d', dir, '-o', 'json')).stdout).certificates.find((c: { kind: string }) => c.kind === 'root').fingerprint;
    expect(s.stdout).toContain(`root CA       SHA-256 ${root}`);
    const j = JSON.parse((await ztc('status', '-d', dir, '-o', 'json')).stdout);
    expect(j).toMatchObject({ warnings: [] });
    expect(Object.keys(j.certificates)).toEqual(['root', 'intermediate', 'server']);
  });

  it('renews the server certificate and the intermediate on the data dir, and says what clients must do', async () => {
    const fingerprint = async () => JSON.parse((await ztc('pki', 'status', '--own', '-o', 'json', '-d', dir)).stdout).certificates.find((c: { kind: string }) => c.kind === 'server').fingerprint as string;
    const before = await fingerprint();
    const r = await ztc('pki', 'renew', 'server', '-d', dir);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^server\s+server\s+\S+\s+36\d\s+at \d{4}-\S+Z\s+([0-9a-f]{2}:){31}[0-9a-f]{2}$/m);
    expect(r.stdout).toMatch(/^clients: .*trust the root/m);
    expect(r.stdout).toMatch(/local mode: a controller already running on this data dir takes the new certificates up within a minute, without a restart/);
    expect(await fingerprint()).not.toBe(before);
    const inter = JSON.parse((await ztc('pki', 'renew', 'intermediate', '-o', 'json', '-d', dir)).stdout);
    expect(inter.renewed.map((c: { kind: string }) => c.kind).sort()).toEqual(['intermediate', 'server', 'signer']);
    // The intermediate and the server certificates it replaced (their keys signed enrollment JWTs), one timestamp per pair.
    const retired = fs.readdirSync(`${dir}/pki/retired`).sort();
    expect(retired.filter((f) => f.startsWith('intermediate-'))).toEqual([expect.stringMatching(/^intermediate-\d+\.key$/), expect.stringMatching(/^intermediate-\d+\.pem$/)]);
    // One timestamp per renewal: the server certificate it replaced carries the intermediate's.
    const at = /^intermediate-(\d+)\.pem$/.exec(retired.find((f) => f.endsWith('.pem') && f.startsWith('intermediate-'))!)![1];
    expect(retired).toEqual(expect.arrayContaining([`server-${at}.key`, `server-${at}.pem`]));
    const stems = retired.map((f) => f.replace(/\.(key|pem)$/, ''));
    expect(stems.filter((f) => f.startsWith('server-')).length).toBeGreaterThanOrEqual(4);
    for (const stem of new Set(stems)) expect(retired).toEqual(expect.arrayContaining([`${stem}.key`, `${stem}.pem`]));
    const bad = await ztc('pki', 'renew', 'root', '-d', dir);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/Cannot renew 'root': choose server, intermediate or signer/);
  });
});
