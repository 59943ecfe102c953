// The built CLI's `update --add-/--remove-role-attributes` and `--add-/--remove-tags`: on a local data
// dir for identities, and through a profile on a running controller for the other kinds (quicker).
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { cliRunner, loggedInController } from '../helpers/cli.js';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const { ztc, useDb, cleanup } = cliRunner();

describe('ztc <kind> update with attribute and tag edits', { timeout: 180_000 }, () => {
  const dir = tempDataDir();
  let running: Running;
  beforeAll(async () => {
    useDb(await testDatabase());
    running = await loggedInController(ztc);
  });
  afterAll(async () => {
    await running.close();
    fs.rmSync(dir, { recursive: true, force: true });
    cleanup();
  });

  const get = async (kind: string, name: string, remote = false) => {
    const r = await ztc(kind, 'get', name, ...(remote ? [] : ['-d', dir]), '-o', 'json');
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as { roleAttributes: string[]; tags: Record<string, unknown> };
  };

  it('changes an identity\'s attributes and tags, keeping the others', async () => {
    expect((await ztc('identity', 'create', 'laptop-01', '-d', dir, '--role-attributes', 'us,staff', '--tags', 'env=prod,team=a', '--type', 'Device')).code).toBe(0);
    const u = await ztc('identity', 'update', 'laptop-01', '-d', dir, '--add-role-attributes', 'eu', '--remove-role-attributes', 'us', '--add-tags', 'owner=ops,team=b', '--remove-tags', 'env');
    expect(u.stderr).toBe('');
    expect(u.stdout).toMatch(/updated identity laptop-01/);
    const got = await get('identity', 'laptop-01');
    expect([...got.roleAttributes].sort()).toEqual(['eu', 'staff']);
    expect(got.tags).toEqual({ owner: 'ops', team: 'b' });
  });

  it('does the same for services, edge routers and posture checks (whose type is kept without being given)', async () => {
    expect((await ztc('service', 'create', 'web', '--role-attributes', 'old')).code).toBe(0);
    expect((await ztc('service', 'update', 'web', '--add-role-attributes', 'new,extra', '--remove-role-attributes', 'old')).code).toBe(0);
    expect([...(await get('service', 'web', true)).roleAttributes].sort()).toEqual(['extra', 'new']);

    expect((await ztc('edge-router', 'create', 'er-1', '--role-attributes', 'public')).code).toBe(0);
    expect((await ztc('edge-router', 'update', 'er-1', '--add-role-attributes', 'eu', '--add-tags', 'zone=1')).code).toBe(0);
    const er = await get('edge-router', 'er-1', true);
    expect([...er.roleAttributes].sort()).toEqual(['eu', 'public']);
    expect(er.tags).toEqual({ zone: '1' });

    const made = await ztc('posture-check', 'create', 'corp-domain', '--type-id', 'MFA');
    expect(made.code, made.stderr).toBe(0);
    const pc = await ztc('posture-check', 'update', 'corp-domain', '--add-role-attributes', 'corp');
    expect(pc.stderr).toBe('');
    expect((await get('posture-check', 'corp-domain', true)).roleAttributes).toEqual(['corp']);
  });

  it('refuses a whole list together with edits of it, and a tag without a value', async () => {
    const both = await ztc('identity', 'update', 'laptop-01', '-d', dir, '--role-attributes', 'x', '--add-role-attributes', 'y');
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/either --role-attributes/);
    const bad = await ztc('identity', 'update', 'laptop-01', '-d', dir, '--add-tags', 'novalue');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/expected key=value/);
    expect([...(await get('identity', 'laptop-01')).roleAttributes].sort()).toEqual(['eu', 'staff']);
  });
});
