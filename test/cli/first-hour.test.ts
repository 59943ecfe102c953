// Stumbles of a newcomer's first hour (../shared/reports/newcomer-2026-11-24.md), through the built CLI:
// boolean flags never save a silent false, global options go before the command too, a --filter
// where no list is says where filters go, and a stopped controller is named as such.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { bin, cliRunner, loggedInController, killLeftovers, tracked } from '../helpers/cli.js';
import { ADMIN, MGMT, tempDataDir } from '../helpers/controller.js';

// A failing test must not leave the processes it started running.
afterAll(killLeftovers);

const cli = cliRunner();
const { ztc } = cli;
let running: Running;
beforeAll(async () => {
  running = await loggedInController(ztc);
}, 60_000);
afterAll(async () => {
  await running?.close();
  cli.cleanup();
});

describe('the first hour', () => {
  it('boolean flags take true/false/yes/no/1/0 in any case and refuse anything else', async () => {
    expect((await ztc('identity', 'create', 'dave', '--type', 'User', '--is-admin', 'YES')).code).toBe(0);
    expect(JSON.parse((await ztc('identity', 'get', 'dave', '-o', 'json')).stdout).isAdmin).toBe(true);
    expect((await ztc('identity', 'update', 'dave', '--is-admin', '0')).code).toBe(0);
    expect(JSON.parse((await ztc('identity', 'get', 'dave', '-o', 'json')).stdout).isAdmin).toBe(false);
    const maybe = await ztc('identity', 'update', 'dave', '--is-admin', 'maybe');
    expect(maybe.code).not.toBe(0);
    expect(maybe.stderr).toMatch(/--is-admin takes true or false/);
    expect(JSON.parse((await ztc('identity', 'get', 'dave', '-o', 'json')).stdout).isAdmin).toBe(false);
  });

  it('creates OS and multi-process posture checks with their flags, as the help shows them', async () => {
    const help = await ztc('posture-check', 'create', '--help');
    expect(help.stdout).toMatch(/--operating-systems <os\[:version\.\.\.\],\.\.\.\|json>/);
    expect(help.stdout).toMatch(/--processes <os:path,\.\.\.\|json>/);
    const os = await ztc('posture-check', 'create', 'corp-os', '--type-id', 'OS', '--operating-systems', 'linux:>=5.0.0,Windows:>=10.0.19041:<11', '-o', 'json');
    expect(os.code, os.stderr).toBe(0);
    const osCheck = JSON.parse((await ztc('posture-check', 'get', 'corp-os', '-o', 'json')).stdout);
    expect(osCheck.operatingSystems).toEqual([
      { type: 'Linux', versions: ['>=5.0.0'] },
      // Versions come back sorted, as upstream keeps them as a set.
      { type: 'Windows', versions: ['<11', '>=10.0.19041'] },
    ]);
    const json = await ztc('posture-check', 'create', 'corp-os-json', '--type-id', 'OS', '--operating-systems', '[{"type":"macOS","versions":[">=14"]}]');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse((await ztc('posture-check', 'get', 'corp-os-json', '-o', 'json')).stdout).operatingSystems).toEqual([{ type: 'macOS', versions: ['>=14'] }]);
    const multi = await ztc('posture-check', 'create', 'agents', '--type-id', 'PROCESS_MULTI', '--semantic', 'AllOf', '--processes', 'Windows:C:\\agent.exe,Linux:/usr/bin/agent');
    expect(multi.code, multi.stderr).toBe(0);
    const processes = JSON.parse((await ztc('posture-check', 'get', 'agents', '-o', 'json')).stdout).processes as { osType: string; path: string }[];
    expect(processes.map((p) => [p.osType, p.path])).toEqual([
      ['Windows', 'C:\\agent.exe'],
      ['Linux', '/usr/bin/agent'],
    ]);
    const wrong = await ztc('posture-check', 'create', 'bad-os', '--type-id', 'OS', '--operating-systems', 'Plan9');
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/'Plan9' is not an OS type: use Windows, WindowsServer, Android, iOS, Linux, macOS/);
  });

  it('keeps -o for the output format on identity create: a JWT file is -o NAME.jwt or --jwt-output-file', async () => {
    const kiosk = path.join(cli.home, 'kiosk.json');
    const refused = await ztc('identity', 'create', 'kiosk', '-o', kiosk);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/-o takes an output format \(table, json or yaml\) or a FILE\.jwt.*use --jwt-output-file/);
    expect(fs.existsSync(kiosk)).toBe(false);
    // Refused before anything was created.
    expect((await ztc('identity', 'get', 'kiosk')).code).not.toBe(0);
    const asJson = await ztc('identity', 'create', 'kiosk', '-o', 'JSON');
    expect(asJson.code, asJson.stderr).toBe(0);
    expect(JSON.parse(asJson.stdout).enrollment.jwt).toMatch(/^ey/);
    const named = await ztc('identity', 'create', 'kiosk-2', '-f', kiosk);
    expect(named.code, named.stderr).toBe(0);
    expect(fs.readFileSync(kiosk, 'utf8')).toMatch(/^ey/);
    const er = await ztc('edge-router', 'create', 'er-kiosk', '-o', 'er.yaml.txt');
    expect(er.code).not.toBe(0);
    expect(er.stderr).toMatch(/-o takes an output format/);
  });

  it('shows the root CA fingerprint in one form (SHA-256, colon hex) at login and in pki status', async () => {
    // By another name than the profiles here pinned it under: a first meeting, which asks.
    const asked = await ztc('login', running.url.replace('127.0.0.1', 'localhost'), '-u', 'admin', '-p', 'x', '--profile', 'unpinned');
    expect(asked.stderr).toMatch(/is not trusted yet/);
    expect(asked.code).not.toBe(0);
    const shown = /SHA-256 ((?:[0-9a-f]{2}:){31}[0-9a-f]{2})/.exec(asked.stderr)?.[1];
    expect(shown, asked.stderr).toBeDefined();
    const table = await ztc('pki', 'status', '--own');
    // (Between its days left and its fingerprint: when it renews; the root, never by itself.)
    expect(table.stdout).toMatch(new RegExp(`^root\\s+root CA\\s+\\S+\\s+\\d+\\s+never \\(by itself\\)\\s+${shown}$`, 'm'));
  });

  it('takes --profile and -o before the command, as kubectl users type them', async () => {
    const listed = await ztc('-o', 'json', '--profile', 'default', 'identity', 'list');
    expect(listed.code, listed.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(listed.stdout))).toBe(true);
    const services = await ztc('--profile', 'default', 'service', 'list');
    expect(services.code, services.stderr).toBe(0);
    // -d too: the command gets it (this dir holds no controller, which the command says).
    const local = await ztc('-d', path.join(cli.home, 'no-such-dir'), 'identity', 'list');
    expect(local.stderr).toMatch(/holds no controller \(no pki\/ in it\)/);
  });

  it('says that filters are for lists when a command that is not one is given --filter', async () => {
    const r = await ztc('identity', 'get', 'x', '--filter', 'type = "Device"');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/hint: filters are for lists: ztc identity list --filter/);
  });

  it('names a controller that does not answer, without a stray "?"', async () => {
    // A port nobody listens on: bound and closed again.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const r = await ztc('identity', 'list', '--profile', 'nowhere');
    expect(r.code).not.toBe(0);
    const login = await ztc('login', `https://127.0.0.1:${port}`, '-u', 'admin', '-p', 'x', '--yes');
    expect(login.code).not.toBe(0);
    expect(login.stderr).toMatch(/does not answer \(connection refused\): is it running\?/);
    expect(login.stderr).not.toMatch(/\?:/);
    // Through a saved profile whose controller is stopped: the profile is named, with what to do.
    const file = path.join(cli.home, 'profiles.json');
    const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    saved.profiles.stopped = { ...saved.profiles.default, url: `https://127.0.0.1:${port}` };
    fs.writeFileSync(file, JSON.stringify(saved), { mode: 0o600 });
    const stopped = await ztc('service', 'list', '--profile', 'stopped');
    expect(stopped.code).not.toBe(0);
    expect(stopped.stderr).toMatch(new RegExp(`the controller of profile 'stopped' \\(https://127\\.0\\.0\\.1:${port}\\) does not answer \\(connection refused\\): is it running\\? .*ztc profile use NAME`));
    expect(stopped.stderr).not.toMatch(/\?:|services\?/);
  });

  it('says which entity already has a name, and what to type instead', async () => {
    expect((await ztc('posture-check', 'create', 'corp-mfa', '--type-id', 'MFA')).code).toBe(0);
    const id = JSON.parse((await ztc('posture-check', 'get', 'corp-mfa', '-o', 'json')).stdout).id as string;
    const again = await ztc('posture-check', 'create', 'corp-mfa', '--type-id', 'MFA');
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`a posture check named 'corp-mfa' already exists (id ${id}): change it with \`ztc posture-check update corp-mfa ...\``);
    // A rename onto a taken name says the same (without the create hint).
    expect((await ztc('posture-check', 'create', 'corp-mfa-2', '--type-id', 'MFA')).code).toBe(0);
    const renamed = await ztc('posture-check', 'update', 'corp-mfa-2', '--name', 'corp-mfa');
    expect(renamed.code).not.toBe(0);
    expect(renamed.stderr).toContain(`a posture check named 'corp-mfa' already exists (id ${id})`);
  });

  it('quickstart says that it switched the current profile, shows the generated password once, and repeats its flags in the restart hint', async () => {
    // A home where another profile is current, as a user who had logged in before has.
    const home = fs.mkdtempSync(path.join(cli.home, 'qs-'));
    fs.copyFileSync(path.join(cli.home, 'profiles.json'), path.join(home, 'profiles.json'));
    const dir = tempDataDir();
    const child = tracked(spawn(process.execPath, [bin, 'quickstart', '-d', dir, '--port', '0', '--bind', '127.0.0.1', '--hostnames', 'localhost', '--no-router', '--no-ctrl'], {
      env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: '', ZTC_ADMIN_PASSWORD: '', ZTC_LOG_FORMAT: 'json' },
    }));
    let out = '';
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('Stop with Ctrl-C')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`quickstart exited with ${code}: ${out}`)));
      });
    } finally {
      child.kill('SIGTERM');
    }
    expect(out).toMatch(/\(current profile: quickstart, was: default; back with: \S*ztc profile use default\)/);
    expect(out).toMatch(/admin\s+admin \(password below\)/);
    expect(out).not.toMatch(/password as given/);
    expect(out).toMatch(/│ admin password for 'admin': \S+ {3}\(generated; shown only this once\) │/);
    expect(out).toContain('Admin: admin, with the generated password in the box above (shown only this once)');
    const hint = /start again with: \S*ztc serve (.*)$/m.exec(out)![1];
    for (const flag of [`-d ${dir}`, '--port 0', '--bind 127.0.0.1', '--hostnames localhost', '--no-router', '--no-ctrl']) expect(hint).toContain(flag);
  }, 60_000);

  it('takes choices in any case and does not offer Invalid', async () => {
    const help = await ztc('service-policy', 'create', '--help');
    expect(help.stdout).toMatch(/choices: "Dial", "Bind"\)/);
    expect(help.stdout).not.toMatch(/Invalid/);
    const made = await ztc('service-policy', 'create', 'lower-bind', '--type', 'bind', '--identity-roles', '#x', '--service-roles', '#y');
    expect(made.code, made.stderr).toBe(0);
    expect(JSON.parse((await ztc('service-policy', 'get', 'lower-bind', '-o', 'json')).stdout).type).toBe('Bind');
    const bad = await ztc('service-policy', 'create', 'bad-type', '--type', 'Invalid', '--identity-roles', '#x', '--service-roles', '#y');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/Allowed choices are Dial, Bind\./);
  });

  it('deletes several entities at once, or those a filter matches; an unknown name deletes nothing', async () => {
    for (const name of ['bulk-1', 'bulk-2', 'bulk-3', 'bulk-4', 'keep-1']) expect((await ztc('service', 'create', name)).code).toBe(0);
    const typo = await ztc('service', 'delete', 'bulk-1', 'no-such-service');
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toMatch(/no-such-service/);
    expect((await ztc('service', 'get', 'bulk-1')).code).toBe(0);
    const two = await ztc('service', 'delete', 'bulk-1', 'bulk-2');
    expect(two.code, two.stderr).toBe(0);
    expect(two.stdout).toBe('deleted service bulk-1\ndeleted service bulk-2\n');
    const where = await ztc('service', 'delete', '--where', 'name contains "bulk-"');
    expect(where.code, where.stderr).toBe(0);
    expect(where.stdout.split('\n').filter(Boolean).sort()).toEqual(['deleted service bulk-3', 'deleted service bulk-4']);
    const names = JSON.parse((await ztc('service', 'list', '-o', 'json')).stdout).map((x: { name: string }) => x.name);
    expect(names).toContain('keep-1');
    expect(names.filter((n: string) => n.startsWith('bulk-'))).toEqual([]);
    expect((await ztc('service', 'delete', '--where', 'name = "none-such"')).stdout).toMatch(/no service matches: nothing deleted/);
    expect((await ztc('service', 'delete')).stderr).toMatch(/Which service\? Give its id or name \(several are fine\), or --where FILTER/);
  });

  it('leaves empty fields out of a get table', async () => {
    expect((await ztc('edge-router', 'create', 'er-empty')).code).toBe(0);
    const r = await ztc('edge-router', 'get', 'er-empty');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^name\s+er-empty$/m);
    // No line that is a field name alone, no `key=` without a value.
    expect(r.stdout.split('\n').filter((l) => /^\S+\s*$/.test(l))).toEqual([]);
    expect(r.stdout).not.toMatch(/\w=(,|$)/m);
  });

  it('ends the previous session of a profile when it logs in again', async () => {
    const file = path.join(cli.home, 'profiles.json');
    const before = JSON.parse(fs.readFileSync(file, 'utf8')).profiles.default.token as string;
    const again = await ztc('login', running.url, '-u', 'admin', '-p', ADMIN.password, '--yes');
    expect(again.code, again.stderr).toBe(0);
    const after = JSON.parse(fs.readFileSync(file, 'utf8')).profiles.default.token as string;
    expect(after).not.toBe(before);
    const old = await running.app.inject({ method: 'GET', url: `${MGMT}/current-api-session`, headers: { 'zt-session': before } });
    expect(old.statusCode).toBe(401);
    expect((await ztc('identity', 'list')).code).toBe(0);
  });

  it('keeps no identity whose enrollment could not be made, and says why', async () => {
    const short = await ztc('identity', 'create', 'bob', '--enroll', 'updb');
    expect(short.code).not.toBe(0);
    expect(short.stderr).toMatch(/the identity 'bob' was not kept: a updb username has at least 4 characters \(--username NAME\)/);
    expect((await ztc('identity', 'get', 'bob')).code).not.toBe(0);
    const named = await ztc('identity', 'create', 'bob', '--enroll', 'updb', '--username', 'bob.smith', '-o', 'json');
    expect(named.code, named.stderr).toBe(0);
  });

  it('tells a non-admin that logging in again will not help', async () => {
    const jwt = path.join(cli.home, 'robert.jwt');
    const bob = await ztc('identity', 'create', 'robert', '--enroll', 'updb', '-o', jwt);
    expect(bob.code, bob.stderr).toBe(0);
    const enrolled = await ztc('enroll', jwt, '--password', 'bob-pass-123456');
    expect(enrolled.code, enrolled.stderr).toBe(0);
    // The username the administrator chose is in the JWT: said, not "the username your administrator chose".
    expect(enrolled.stdout).toMatch(/log in as 'robert' with this password \(ztc login https:\/\/\S+ -u robert\)/);
    expect((await ztc('login', running.url, '-u', 'robert', '-p', 'bob-pass-123456', '--yes', '--profile', 'robert')).code).toBe(0);
    const r = await ztc('service', 'list', '--profile', 'robert');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/not an admin/);
    expect(r.stderr).toMatch(/the identity of profile 'robert' may not do this \(logging in again will not change that\)/);
    expect(r.stderr).not.toMatch(/session expired|log in again:/);
  });
});
