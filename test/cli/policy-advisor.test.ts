// The built CLI's `ztc policy-advisor identities|services`, on a local data dir.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliRunner } from '../helpers/cli.js';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const { ztc, useDb, cleanup } = cliRunner();

describe('ztc policy-advisor', { timeout: 180_000 }, () => {
  const dir = tempDataDir();
  beforeAll(async () => {
    useDb(await testDatabase());
    for (const args of [
      ['identity', 'create', 'laptop-01', '--role-attributes', 'staff'],
      ['service', 'create', 'web', '--role-attributes', 'web'],
      ['edge-router', 'create', 'er-1', '--role-attributes', 'public'],
      ['service-policy', 'create', 'staff-dial', '--type', 'Dial', '--identity-roles', '#staff', '--service-roles', '#web'],
      ['edge-router-policy', 'create', 'staff-routers', '--identity-roles', '#staff', '--edge-router-roles', '#public'],
    ]) {
      const r = await ztc(...args, '-d', dir);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    cleanup();
  });

  it('prints a table of the pair and every reason it cannot connect', async () => {
    const r = await ztc('policy-advisor', 'identities', 'laptop-01', '--service', 'web', '-d', dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^IDENTITY\s+SERVICE\s+DIAL\s+BIND\s+EDGE ROUTERS/m);
    expect(r.stdout).toMatch(/^laptop-01\s+web\s+no\s+no\s+-/m);
    expect(r.stdout).toMatch(/^laptop-01 -> web$/m);
    expect(r.stdout).toMatch(/^ {2}dial, bind: identity 'laptop-01' has not enrolled/m);
    expect(r.stdout).toMatch(/^ {2}dial, bind: no service edge router policy gives service 'web' an edge router/m);
    expect(r.stdout).toMatch(/^ {2}bind: no Bind service policy names both/m);
  });

  it('answers JSON for scripts, per service too, and fails on unknown names', async () => {
    const j = await ztc('policy-advisor', 'services', 'web', '-d', dir, '-o', 'json');
    expect(j.stderr).toBe('');
    const pairs = JSON.parse(j.stdout);
    // The default admin and laptop-01, against web.
    expect(pairs.map((p: { identity: { name: string } }) => p.identity.name).sort()).toEqual(['Default Admin', 'laptop-01']);
    const laptop = pairs.find((p: { identity: { name: string } }) => p.identity.name === 'laptop-01');
    expect(laptop.dial.policies.map((p: { name: string }) => p.name)).toEqual(['staff-dial']);
    expect(laptop.dial.reasons.map((x: { code: string }) => x.code).sort()).toEqual(['IDENTITY_NOT_ENROLLED', 'NO_SERVICE_EDGE_ROUTER_POLICY']);

    const missing = await ztc('policy-advisor', 'identities', 'nobody', '-d', dir);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/nobody/);
  });
});
