// Tables are for people: they show names where the API gives ids or role lists, both in lists and
// in `get`, through the built CLI logged in to a running controller (remote mode: each command is
// a fraction of the local mode's start-up).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { bin, cliRunner, loggedInController } from '../helpers/cli.js';
import { ADMIN, MGMT, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

const { ztc, cleanup } = cliRunner();

describe('names in tables', { timeout: 180_000 }, () => {
  let running: Running;
  const run = async (...args: string[]) => {
    const r = await ztc(...args);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    return r.stdout;
  };
  beforeAll(async () => {
    running = await loggedInController(ztc);
    await run('identity', 'create', 'laptop-01', '--role-attributes', 'staff', '--enroll', 'ott');
    await run('edge-router', 'create', 'er-1', '--role-attributes', 'public');
    await run('config', 'create', 'web-intercept', '--config-type-id', 'intercept.v1', '--data', '{"protocols":["tcp"],"addresses":["web.internal"],"portRanges":[{"low":443,"high":443}]}');
    await run('service', 'create', 'web', '--configs', 'web-intercept');
    await run('service-policy', 'create', 'laptop-dial', '--type', 'Dial', '--identity-roles', '@laptop-01,#staff', '--service-roles', '@web');
  });
  afterAll(async () => {
    await running.close();
    cleanup();
  });

  it('policy roles read as @name, not @id', async () => {
    const out = await run('service-policy', 'list');
    expect(out).toMatch(/^ID\s+NAME\s+TYPE\s+SEMANTIC\s+IDENTITY ROLES\s+SERVICE ROLES\s+POSTURE CHECK ROLES$/m);
    expect(out).toMatch(/\s#staff, @laptop-01\s+@web$/m);
  });

  it("a service's configs and an enrollment's identity or router read as names", async () => {
    expect(await run('service', 'list')).toMatch(/^\S+\s+web\s+true\s+web\.internal\s+web-intercept$/m);
    expect(await run('service', 'get', 'web')).toMatch(/^configs\s+web-intercept$/m);
    const enrollments = await run('enrollment', 'list');
    expect(enrollments).toMatch(/^ID\s+METHOD\s+FOR\s+USERNAME\s+EXPIRES AT$/m);
    expect(enrollments).toMatch(/^\S+\s+ott\s+laptop-01\s/m);
    expect(enrollments).toMatch(/^\S+\s+erott\s+er-1\s/m);
    // Scripts still get the API's ids.
    const json = JSON.parse(await run('service', 'list', '-o', 'json')) as { configs: string[] }[];
    expect(json[0].configs[0]).not.toBe('web-intercept');
  });

  it('get shows nested references by name, never JSON with links', async () => {
    const out = await run('identity', 'get', 'laptop-01');
    expect(out).toMatch(/^type\s+Default$/m);
    expect(out).toMatch(/^authPolicy\s+Default$/m);
    expect(out).not.toMatch(/_links|"id"/);
  });
});

describe('completion of entity names', { timeout: 120_000 }, () => {
  let running: Running;
  const cli = cliRunner();
  beforeAll(async () => {
    running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
    const login = await running.app.inject({ method: 'POST', url: `${MGMT}/authenticate?method=password`, payload: ADMIN });
    const token = JSON.parse(login.body).data.token as string;
    for (const name of ['laptop-01', 'laptop-02', 'server-01']) {
      expect((await running.app.inject({ method: 'POST', url: `${MGMT}/identities`, headers: { 'zt-session': token }, payload: { name, type: 'Device', isAdmin: false } })).statusCode).toBe(201);
    }
  });
  afterAll(async () => {
    await running.close();
    cli.cleanup();
  });

  it('completes names after get|update|delete from the current profile, and is silent without one', async () => {
    // Not logged in yet: nothing, quickly, and no error.
    const before = await cli.ztc('__names', 'identity');
    expect(before).toEqual({ code: 0, stdout: '', stderr: '' });
    expect((await cli.ztc('login', running.url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes')).code).toBe(0);
    const names = await cli.ztc('__names', 'identity');
    expect(names.stdout.split('\n')).toEqual(expect.arrayContaining(['laptop-01', 'laptop-02', 'server-01']));

    const script = path.join(cli.home, 'completion.bash');
    fs.writeFileSync(script, (await cli.ztc('completion', 'bash')).stdout);
    // Asynchronous: the controller answering the completion runs in this process.
    const complete = async (...words: string[]) =>
      (
        await promisify(execFile)('bash', ['-c', `source ${script}; COMP_WORDS=(${[bin, ...words].map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length}; _ztc_complete; echo "\${COMPREPLY[@]}"`], {
          env: { ...process.env, ZTC_HOME: cli.home, ZTC_DATA_DIR: '', ZTC_DB: '' },
        })
      ).stdout.trim();
    expect((await complete('identity', 'get', 'lap')).split(' ').sort()).toEqual(['laptop-01', 'laptop-02']);
    expect(await complete('identity', 'delete', 'serv')).toBe('server-01');
    // Only right after the verb, and not for flags.
    expect(await complete('identity', 'get', 'laptop-01', 'lap')).toBe('');
    expect(await complete('identity', 'get', '--pro')).toBe('--profile');
  });

  it('gives up within about a second when the controller does not answer', async () => {
    const silent = await import('node:net').then((net) => net.createServer(() => {}).listen(0, '127.0.0.1'));
    await new Promise((r) => silent.once('listening', r));
    const port = (silent.address() as { port: number }).port;
    const file = path.join(cli.home, 'profiles.json');
    const profiles = JSON.parse(fs.readFileSync(file, 'utf8'));
    const current = profiles.current ?? 'default';
    profiles.profiles[current].url = `https://127.0.0.1:${port}`;
    fs.writeFileSync(file, JSON.stringify(profiles));
    const t0 = Date.now();
    expect(await cli.ztc('__names', 'identity')).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(Date.now() - t0).toBeLessThan(5000);
    silent.close();
  });
});
