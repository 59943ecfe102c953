// A read-only admin (permission admin_readonly) through the built CLI: an admin makes the identity,
// it enrolls and logs in with bin/ztc, reads what an admin reads, and every kind of change it tries
// is refused with a message that says what to do instead (not "log in again", which cannot help).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { cliRunner, loggedInController } from '../helpers/cli.js';

const admin = cliRunner();
const viewer = cliRunner();
const names = async (...args: string[]) => {
  const r = await admin.ztc(...args, '-o', 'json');
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { name: string }[]).map((x) => x.name).sort();
};

describe('a read-only admin through the CLI', { timeout: 180_000 }, () => {
  let running: Running;
  beforeAll(async () => {
    running = await loggedInController(admin.ztc);
    const jwt = path.join(admin.home, 'viewer.jwt');
    const made = await admin.ztc('identity', 'create', 'viewer', '--permissions', 'admin_readonly', '--enroll', 'updb', '-f', jwt);
    expect(made.code, made.stderr).toBe(0);
    for (const change of [
      ['service', 'create', 'payroll'],
      ['identity', 'create', 'alice', '--role-attributes', 'staff'],
      ['service-policy', 'create', 'staff-dial', '--type', 'Dial', '--identity-roles', '#staff', '--service-roles', '@payroll'],
    ]) {
      const r = await admin.ztc(...change);
      expect(r.code, `${change.join(' ')}: ${r.stderr}`).toBe(0);
    }
    const enrolled = await viewer.ztc('enroll', jwt, '--password', 'viewer-pass-1234');
    expect(enrolled.code, enrolled.stderr).toBe(0);
    const login = await viewer.ztc('login', running.url, '-u', 'viewer', '-p', 'viewer-pass-1234', '--yes');
    expect(login.code, login.stderr).toBe(0);
  });
  afterAll(async () => {
    await running?.close();
    admin.cleanup();
    viewer.cleanup();
  });

  it('holds the permission, and is no admin', async () => {
    const me = await admin.ztc('identity', 'get', 'viewer', '-o', 'json');
    expect(me.code, me.stderr).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ name: 'viewer', isAdmin: false, permissions: ['admin_readonly'] });
  });

  it('lists and gets what an admin does', async () => {
    const services = await viewer.ztc('service', 'list', '-o', 'json');
    expect(services.code, services.stderr).toBe(0);
    expect((JSON.parse(services.stdout) as { name: string }[]).map((x) => x.name)).toEqual(['payroll']);
    const identities = await viewer.ztc('identity', 'list', '-o', 'json');
    expect(identities.code, identities.stderr).toBe(0);
    expect((JSON.parse(identities.stdout) as { name: string }[]).map((x) => x.name)).toEqual(expect.arrayContaining(['viewer', 'alice', 'Default Admin']));
    for (const [kind, name] of [['service', 'payroll'], ['identity', 'alice'], ['service-policy', 'staff-dial']]) {
      const got = await viewer.ztc(kind, 'get', name, '-o', 'json');
      expect(got.code, `${kind} get ${name}: ${got.stderr}`).toBe(0);
      expect(JSON.parse(got.stdout).name).toBe(name);
    }
    // The table people read, too.
    const table = await viewer.ztc('service-policy', 'list');
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('staff-dial');
  });

  it('is refused every kind of change, with what to do instead, and nothing changes', async () => {
    const before = await Promise.all([names('service', 'list'), names('identity', 'list'), names('service-policy', 'list')]);
    for (const change of [
      ['service', 'create', 'sneaky'],
      ['service', 'update', 'payroll', '--name', 'renamed'],
      ['service', 'delete', 'payroll'],
      ['identity', 'create', 'someone'],
      ['identity', 'update', 'alice', '--role-attributes', 'contractors'],
      ['identity', 'update', 'viewer', '--is-admin'],
      ['identity', 'delete', 'alice'],
      ['service-policy', 'create', 'open-all', '--type', 'Dial', '--identity-roles', '#all', '--service-roles', '#all'],
      ['service-policy', 'update', 'staff-dial', '--identity-roles', '#all'],
      ['service-policy', 'delete', 'staff-dial'],
      ['token', 'create', 'escalate'],
    ]) {
      const what = change.join(' ');
      const r = await viewer.ztc(...change);
      expect(r.code, what).not.toBe(0);
      // Why (read-only), the server's answer, and what to do: an admin makes the change; this profile cannot.
      expect(r.stderr, what).toMatch(/HTTP 403/);
      expect(r.stderr, what).toMatch(/identity 'viewer' is a read-only admin, which may only read/);
      expect(r.stderr, what).toMatch(/make the change as an admin/);
      expect(r.stderr, what).toMatch(/may only read \(logging in again will not change that\): use an admin's profile/);
      expect(r.stderr, what).not.toMatch(/session expired|log in again:/i);
    }
    expect(await Promise.all([names('service', 'list'), names('identity', 'list'), names('service-policy', 'list')])).toEqual(before);
    const alice = JSON.parse((await admin.ztc('identity', 'get', 'alice', '-o', 'json')).stdout);
    expect(alice.roleAttributes).toEqual(['staff']);
    const me = JSON.parse((await admin.ztc('identity', 'get', 'viewer', '-o', 'json')).stdout);
    expect(me.isAdmin).toBe(false);
    // The session was not spoiled by the refusals: reads still answer.
    expect((await viewer.ztc('service', 'get', 'payroll', '-o', 'json')).code).toBe(0);
    expect(fs.existsSync(path.join(viewer.home, 'profiles.json'))).toBe(true);
  });
});
