// `ztc export` and `ztc import` through the built CLI: the model as YAML, the plan as a diff, and a
// round trip into an empty controller that gives the same file. The first controller is reached
// over HTTPS through a profile (the export streamed over the socket), the second on its data dir.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { cliRunner, loggedInController } from '../helpers/cli.js';
import { tempDataDir, testDatabase } from '../helpers/controller.js';

const first = cliRunner();
const second = cliRunner();

describe('ztc export and import', { timeout: 180_000 }, () => {
  const dirB = tempDataDir();
  let running: Running;
  const file = path.join(first.home, 'net.yaml');
  const ok = async (r: Promise<{ code: number; stdout: string; stderr: string }>) => {
    const x = await r;
    expect(x.code, x.stderr).toBe(0);
    return x.stdout;
  };
  beforeAll(async () => {
    running = await loggedInController(first.ztc);
    second.useDb(await testDatabase());
    await ok(first.ztc('identity', 'create', 'laptop-01', '--type', 'Device', '--role-attributes', 'staff', '--enroll', 'none'));
    await ok(first.ztc('service', 'expose', 'web', '--address', 'web.internal', '--port', '443', '--dial', '#staff'));
  });
  afterAll(async () => {
    await running.close();
    fs.rmSync(dirB, { recursive: true, force: true });
    first.cleanup();
    second.cleanup();
  });

  it('exports YAML with names, imports it into an empty controller, and exports the same file there', async () => {
    const yaml = await ok(first.ztc('export'));
    fs.writeFileSync(file, yaml);
    const doc = YAML.parse(yaml);
    expect(doc.ztcModel).toBe(1);
    expect(doc.identities).toEqual([expect.objectContaining({ name: 'laptop-01', type: 'Default', roleAttributes: ['staff'] })]);
    expect(doc.servicePolicies).toEqual([expect.objectContaining({ name: 'web-dial-policy', identityRoles: ['#staff'], serviceRoles: ['@web'] })]);
    expect(JSON.parse(await ok(first.ztc('export', '-o', 'json')))).toEqual(doc);

    const dry = await ok(second.ztc('import', file, '--dry-run', '-d', dirB));
    expect(dry).toMatch(/^\+ identities laptop-01$/m);
    expect(dry).toMatch(/^\+ services web$/m);
    expect(dry).toMatch(/^4 to create, 0 to update, 0 to delete$/m);
    expect(dry).toMatch(/^dry run: nothing changed$/m);
    const applied = await ok(second.ztc('import', file, '-d', dirB));
    expect(applied).toMatch(/^applied$/m);
    expect(await ok(second.ztc('export', '-d', dirB))).toBe(yaml);
    expect(await ok(second.ztc('import', file, '-d', dirB))).toMatch(/^nothing to change/);
  });

  it('shows updates field by field and deletes only with --prune', async () => {
    const doc = YAML.parse(fs.readFileSync(file, 'utf8'));
    doc.identities[0].roleAttributes = ['staff', 'eu'];
    doc.servicePolicies = [];
    const changed = path.join(second.home, 'changed.yaml');
    fs.writeFileSync(changed, YAML.stringify(doc));
    const out = await ok(second.ztc('import', changed, '--prune', '--dry-run', '-d', dirB));
    expect(out).toMatch(/^~ identities laptop-01\n {4}roleAttributes: \["staff"\] → \["staff","eu"\]$/m);
    expect(out).toMatch(/^- servicePolicies web-dial-policy$/m);
    const json = JSON.parse(await ok(second.ztc('import', changed, '--prune', '-o', 'json', '-d', dirB)));
    expect(json.applied).toBe(true);
    expect(YAML.parse(await ok(second.ztc('export', '-d', dirB))).servicePolicies).toEqual([]);
  });

  it('says what is wrong with a file', async () => {
    const bad = path.join(second.home, 'bad.yaml');
    fs.writeFileSync(bad, 'identities: [ {name: x, type: User, isAdmin: false, colour: red} ]\n');
    const r = await second.ztc('import', bad, '-d', dirB);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/identities\[0\] 'x': 'colour' is not a field of identities/);
    fs.writeFileSync(bad, 'identities: [ {name: x\n');
    expect((await second.ztc('import', bad, '-d', dirB)).stderr).toMatch(/bad\.yaml is not YAML or JSON/);
    expect((await second.ztc('import', path.join(second.home, 'nope.yaml'), '-d', dirB)).stderr).toMatch(/cannot read .*nope\.yaml/);
  });
});
