// The built program, run as a user would: bin/ztc in local mode (a data dir) and remote mode (a profile).
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killLeftovers, tracked } from '../helpers/cli.js';
import { startController, type Running } from '../../src/server/controller.js';
import { generate } from 'otplib';
import { TestCa } from '../helpers/certs.js';
import { ADMIN, tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

// A failing test must not leave the processes it started running.
afterAll(killLeftovers);

const bin = path.resolve('bin/ztc');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-home-'));
/** The local-mode database (ZTC_DB) for these runs: SQLite in the data dir, or a fresh PostgreSQL one. */
let localDb = '';

function ztc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: localDb }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

// Each command is a fresh process (start, open the store): a test of a dozen commands needs minutes, not the default 30 s.
describe('ztc on a local data dir', { timeout: 120_000 }, () => {
  const dir = tempDataDir();
  beforeAll(async () => {
    localDb = await testDatabase();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('initialises the data dir and shows the generated admin password once', async () => {
    const first = await ztc('identity', 'list', '-d', dir);
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/default admin 'admin', password \S{8,}/);
    expect(first.stdout).toMatch(/^ID\s+NAME\s+TYPE\s+IS ADMIN/m);
    expect(first.stdout).toMatch(/Default Admin\s+Default\s+true/);
    expect(first.stdout).toMatch(/1-1 of 1/);
    const second = await ztc('identity', 'list', '-d', dir);
    expect(second.stderr).not.toMatch(/password/);
  });

  it('creates, lists with a filter, reads, updates and deletes identities', async () => {
    const made = await ztc('identity', 'create', 'web-01', '-d', dir, '--role-attributes', 'web,prod', '--tags', 'env=prod', '--type', 'Device');
    expect(made.stderr).toBe('');
    expect(made.code).toBe(0);
    const id = /created identity (\w+)/.exec(made.stdout)![1];

    const json = await ztc('identity', 'list', 'name contains "web"', '-d', dir, '-o', 'json');
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id, name: 'web-01', typeId: 'Default', roleAttributes: ['prod', 'web'], tags: { env: 'prod' } });

    const yaml = await ztc('identity', 'get', 'web-01', '-d', dir, '-o', 'yaml');
    expect(yaml.stdout).toMatch(new RegExp(`^id: ${id}$`, 'm'));
    const table = await ztc('identity', 'get', id, '-d', dir);
    expect(table.stdout).toMatch(/^name\s+web-01$/m);

    expect((await ztc('identity', 'update', 'web-01', '-d', dir, '--is-admin', '--role-attributes', 'db')).code).toBe(0);
    const after = JSON.parse((await ztc('identity', 'get', id, '-d', dir, '-o', 'json')).stdout);
    expect(after).toMatchObject({ isAdmin: true, roleAttributes: ['db'] });

    expect((await ztc('identity', 'delete', 'web-01', '-d', dir)).code).toBe(0);
    const gone = await ztc('identity', 'get', id, '-d', dir);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/No identity has the id or name/);
  });

  it('manages auth policies, disables and enables identities, and explains that MFA needs a login', async () => {
    const primary = JSON.stringify({
      cert: { allowed: true, allowExpiredCerts: false },
      updb: { allowed: true, minPasswordLength: 12, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false, maxAttempts: 5, lockoutDurationMinutes: 10 },
      extJwt: { allowed: false, allowedSigners: [] },
    });
    expect((await ztc('auth-policy', 'create', 'strict', '-d', dir, '--primary', primary, '--secondary', 'requireTotp=false')).code).toBe(0);
    const table = await ztc('auth-policy', 'list', '-d', dir);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+UPDB ALLOWED\s+CERT ALLOWED\s+EXT JWT ALLOWED\s+SECONDARY REQUIRE TOTP/m);
    expect(table.stdout).toMatch(/strict\s+true\s+true\s+false\s+false/);
    expect((await ztc('identity', 'create', 'dis-1', '-d', dir)).code).toBe(0);
    expect((await ztc('identity', 'disable', 'dis-1', '--minutes', '5', '-d', dir)).stdout).toMatch(/disabled identity dis-1/);
    expect(JSON.parse((await ztc('identity', 'get', 'dis-1', '-d', dir, '-o', 'json')).stdout).disabled).toBe(true);
    expect((await ztc('identity', 'enable', 'dis-1', '-d', dir)).code).toBe(0);
    expect(JSON.parse((await ztc('identity', 'get', 'dis-1', '-d', dir, '-o', 'json')).stdout).disabled).toBe(false);
    const mfa = await ztc('mfa', 'status', '-d', dir);
    expect(mfa.code).toBe(1);
    expect(mfa.stderr).toMatch(/ztc login/);
    expect((await ztc('api-session', 'list', '-d', dir, '-o', 'json')).code).toBe(0);
  });

  it('builds a network: services, an edge router with its JWT, policies, and policy advice', async () => {
    const ok = async (...args: string[]) => {
      const r = await ztc(...args, '-d', dir);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout;
    };
    await ok('service', 'create', 'web', '--role-attributes', 'web');
    await ok('identity', 'create', 'webuser', '--role-attributes', 'staff');
    const jwtFile = path.join(dir, 'er.jwt');
    expect(await ok('edge-router', 'create', 'er-cli', '--role-attributes', 'public', '-o', jwtFile)).toMatch(/enrollment JWT written/);
    expect(fs.readFileSync(jwtFile, 'utf8')).toMatch(/^ey/);
    expect(fs.statSync(jwtFile).mode & 0o777).toBe(0o600);
    let advice = await ok('identity', 'policy-advice', 'webuser', 'web');
    expect(advice).toMatch(/dial: not allowed/);
    expect(advice).toMatch(/next: add a service policy/);
    await ok('service-policy', 'create', 'web-dial', '--type', 'Dial', '--identity-roles', '#staff', '--service-roles', '#web');
    await ok('edge-router-policy', 'create', 'staff-public', '--identity-roles', '#staff', '--edge-router-roles', '#public');
    await ok('service-edge-router-policy', 'create', 'web-public', '--service-roles', '@web', '--edge-router-roles', '#public');
    advice = await ok('identity', 'policy-advice', 'webuser', 'web');
    // The same answer as the policy advisor: the policies allow it, the identity and router are not ready yet.
    expect(advice).toMatch(/dial: allowed by policies, but not possible yet\s+bind: not allowed/);
    expect(advice).toMatch(/1 in common: er-cli/);
    expect(advice).toMatch(/^ {2}dial, bind: identity 'webuser' has not enrolled/m);
    const advisor = await ok('policy-advisor', 'identities', 'webuser', '--service', 'web');
    expect(advisor).toMatch(/^webuser\s+web\s+no\s+no/m);
    const policy = JSON.parse(await ok('service-edge-router-policy', 'get', 'web-public', '-o', 'json'));
    expect(policy.serviceRolesDisplay).toEqual([{ role: expect.stringMatching(/^@/), name: '@web' }]);
    expect(await ok('edge-router', 're-enroll', 'er-cli')).toMatch(/^edge router \S+\ney/);
    // Any other operation goes through `ztc api`, with the same transport and output.
    expect((await ok('api', 'GET', '/service-role-attributes')).split('\n')).toContain('web');
    expect(JSON.parse(await ok('api', 'GET', '/summary', '-o', 'json'))).toMatchObject({ services: 1, 'routers.edge': 1 });
    // The fabric API by its own path (not taken for a management one).
    const routers = JSON.parse(await ok('api', 'GET', '/fabric/v1/routers', '-o', 'json')) as { name: string; connected: boolean }[];
    expect(routers.find((r) => r.name === 'er-cli')).toMatchObject({ connected: false });
    // A name where the id goes is looked up, as other commands do.
    const byName = JSON.parse(await ok('api', 'GET', '/identities/webuser/services', '-o', 'json')) as { name: string }[];
    expect(byName.map((s) => s.name)).toEqual(['web']);
    const refused = await ztc('api', 'GET', '/identities/nope/services', '-d', dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/not found \[NOT_FOUND, HTTP 404\]/);
  });

  it('checks, fixes and snapshots the database', async () => {
    const check = await ztc('db', 'check', '-d', dir);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toMatch(/no problems found/);
    const snap = await ztc('db', 'snapshot', '-d', dir, '-o', 'json');
    expect(snap.code, snap.stderr).toBe(0);
    // Locally the CLI completes the file name the API gives with the data dir.
    const file = JSON.parse(snap.stdout).path as string;
    expect(file).toBe(path.join(dir, 'snapshots', JSON.parse(snap.stdout).name));
    if (!localDb) expect(fs.existsSync(file)).toBe(true);
    const fix = await ztc('db', 'fix', '-d', dir);
    expect(fix.code, fix.stderr).toBe(0);
  });

  it('prints a bash completion script that completes commands, subcommands and flags', async () => {
    const script = await ztc('completion', 'bash');
    expect(script.code).toBe(0);
    const file = path.join(dir, 'completion.bash');
    fs.writeFileSync(file, script.stdout);
    const complete = (...words: string[]) =>
      execFileSync('bash', ['-c', `source ${file}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _ztc_complete; echo "\${COMPREPLY[@]}"`]).toString().trim();
    expect(complete('ztc', 'service-p')).toBe('service-policy');
    expect(complete('ztc', 'db', '')).toBe('snapshot check fix');
    expect(complete('ztc', 'edge-router', 're')).toBe('re-enroll');
    expect(complete('ztc', 'service-policy', 'create', '--ide')).toBe('--identity-roles');
    expect((await ztc('completion', 'tcsh')).code).not.toBe(0);
  });

  it('prints a fish completion script that completes the same words', async () => {
    const script = await ztc('completion', 'fish');
    expect(script.code).toBe(0);
    expect(script.stdout).toMatch(/^complete -c ztc -f -n '__ztc_is "db"' -a 'snapshot check fix/m);
    // Run it in fish where fish is installed (apt-get install fish); the script's shape is checked above.
    if (!fs.existsSync('/usr/bin/fish')) return;
    const file = path.join(dir, 'completion.fish');
    fs.writeFileSync(file, script.stdout);
    const complete = (line: string) => execFileSync('fish', ['-c', `source ${file}; complete -C '${line}'`]).toString().trim().split('\n').map((l) => l.split('\t')[0]);
    expect(complete('ztc service-p')).toEqual(['service-policy']);
    expect(complete('ztc db ').sort()).toEqual(['check', 'fix', 'snapshot']);
    expect(complete('ztc service-policy create --ide')).toEqual(['--identity-roles']);
  });

  it('exits non-zero with the server message on refused input', async () => {
    const bad = await ztc('identity', 'create', 'x', '-d', dir, '--default-hosting-cost', '70000');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/defaultHostingCost.*65535.*COULD_NOT_VALIDATE/);
    const dflt = await ztc('identity', 'delete', 'Default Admin', '-d', dir);
    expect(dflt.code).toBe(1);
    expect(dflt.stderr).toMatch(/ENTITY_CAN_NOT_BE_DELETED/);
    const format = await ztc('identity', 'list', '-d', dir, '-o', 'xml');
    expect(format.code).toBe(1);
    expect(format.stderr).toMatch(/table, json or yaml/);
  });
});

describe('ztc against a running controller', () => {
  let running: Running;
  beforeAll(async () => {
    running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
  });
  afterAll(() => running.close());

  it('logs in with a pinned CA, works remotely and logs out', async () => {
    const url = `https://127.0.0.1:${running.ctx.config.port}`;
    const unsure = await ztc('login', url, '-u', ADMIN.username, '-p', ADMIN.password);
    expect(unsure.code).toBe(1);
    expect(unsure.stderr).toMatch(/SHA-256 ([0-9a-f]{2}:){31}[0-9a-f]{2}\) is not trusted yet.*--yes/);
    const wrong = await ztc('login', url, '-u', ADMIN.username, '-p', 'wrong-password', '--yes');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/refused username 'admin' with that password \[INVALID_AUTH, HTTP 401\]: check both.*ztc admin reset-password -d DATA_DIR/);

    const ok = await ztc('login', url, '-u', ADMIN.username, '-p', ADMIN.password, '--yes');
    expect(ok.stdout).toMatch(/logged in to/);
    const profile = JSON.parse(fs.readFileSync(path.join(home, 'profiles.json'), 'utf8'));
    expect(profile.profiles.default.caPem).toContain(running.ctx.pki.rootPem.trim());
    expect(fs.statSync(path.join(home, 'profiles.json')).mode & 0o777).toBe(0o600);

    expect((await ztc('identity', 'create', 'remote-1')).code).toBe(0);
    const rows = JSON.parse((await ztc('identity', 'list', '-o', 'json')).stdout);
    expect(rows.map((r: { name: string }) => r.name)).toContain('remote-1');
    const version = JSON.parse((await ztc('version', '-o', 'json')).stdout);
    expect(version).toMatchObject({ controller: expect.stringMatching(/^v\d/), target: url });

    // Enrollment end to end: the admin makes a JWT, the device enrolls with it and gets an identity file.
    const jwtFile = path.join(home, 'dev-cli.jwt');
    const made = await ztc('identity', 'create', 'dev-cli', '--type', 'Device', '--enroll', 'ott', '-o', jwtFile);
    expect(made.stdout).toMatch(/ott enrollment: JWT written to .*dev-cli\.jwt/);
    expect(fs.statSync(jwtFile).mode & 0o777).toBe(0o600);
    const enrolled = await ztc('enroll', jwtFile);
    expect(enrolled.stderr).toBe('');
    expect(enrolled.stdout).toMatch(/identity file written to .*dev-cli\.json/);
    const idFile = JSON.parse(fs.readFileSync(path.join(home, 'dev-cli.json'), 'utf8'));
    expect(idFile.ztAPI).toBe(`https://localhost:${running.ctx.config.port}/edge/client/v1`);
    expect(idFile.id.cert).toMatch(/^pem:-----BEGIN CERTIFICATE-----/);
    expect(fs.statSync(path.join(home, 'dev-cli.json')).mode & 0o777).toBe(0o600);
    const again = await ztc('enroll', jwtFile);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/unknown or has already been used/);
    const shown = JSON.parse((await ztc('identity', 'get', 'dev-cli', '-o', 'json')).stdout);
    expect(shown.authenticators.cert.fingerprint).toMatch(/^[0-9a-f]{40}$/);

    // CAs and enrollments from the CLI.
    const ca = new TestCa('CLI CA');
    fs.writeFileSync(path.join(home, 'ca.pem'), ca.pem);
    expect((await ztc('ca', 'create', 'cli-ca', '--cert-pem', `@${path.join(home, 'ca.pem')}`, '--is-auth-enabled')).code).toBe(0);
    const caRow = JSON.parse((await ztc('ca', 'get', 'cli-ca', '-o', 'json')).stdout);
    expect(caRow).toMatchObject({ isVerified: false, isAuthEnabled: true });
    fs.writeFileSync(path.join(home, 'verify.pem'), ca.issue(caRow.verificationToken).certPem);
    const verified = await ztc('ca', 'verify', 'cli-ca', '--cert', path.join(home, 'verify.pem'));
    expect(verified.stdout).toMatch(/verified CA cli-ca/);
    expect(JSON.parse((await ztc('ca', 'get', caRow.id, '-o', 'json')).stdout).isVerified).toBe(true);
    expect((await ztc('ca', 'jwt', 'cli-ca')).stdout).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect((await ztc('identity', 'create', 'pending-user', '--enroll', 'updb')).code).toBe(0);
    const pending = JSON.parse((await ztc('enrollment', 'list', 'method = "updb"', '-o', 'json')).stdout);
    expect(pending.map((e: { username: string }) => e.username)).toContain('pending-user');
    const refreshed = await ztc('enrollment', 'refresh', pending[0].id, '--minutes', '30');
    expect(refreshed.stdout).toMatch(/refreshed enrollment/);

    // MFA for the logged-in identity.
    const started = JSON.parse((await ztc('mfa', 'enable', '-o', 'json')).stdout);
    expect(started.provisioningUrl).toMatch(/^otpauth:\/\/totp\//);
    const secret = new URL(started.provisioningUrl).searchParams.get('secret')!;
    expect((await ztc('mfa', 'verify', await generate({ secret }))).stdout).toMatch(/MFA enabled/);
    expect(JSON.parse((await ztc('mfa', 'status', '-o', 'json')).stdout).isVerified).toBe(true);
    const badCode = await ztc('mfa', 'disable', '--code', '000000');
    expect(badCode.code).toBe(1);
    expect(badCode.stderr).toMatch(/MFA_INVALID_TOKEN/);

    expect((await ztc('logout')).stdout).toMatch(/logged out/);
    const after = await ztc('identity', 'list');
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/Logged out of/);
  }, 180_000);
});

describe('ztc quickstart', () => {
  it('starts a controller, logs the CLI in, and leaves a sample identity ready to enroll', async () => {
    const dir = tempDataDir();
    const qsHome = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-qs-home-'));
    const env = { ...process.env, ZTC_HOME: qsHome, ZTC_DATA_DIR: '', ZTC_DB: '' };
    const child = tracked(spawn(process.execPath, [bin, 'quickstart', '-d', dir, '--port', '0', '--bind', '127.0.0.1', '--hostnames', 'localhost', '--admin-password', 'quick-pass-1'], { env }));
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('Stop with Ctrl-C')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`quickstart exited with ${code}: ${out}`)));
      });
      expect(out).toMatch(/logged in \(profile 'quickstart'\)/);
      const jwtFile = path.join(dir, 'quickstart-device.jwt');
      expect(out).toContain(`ztc enroll ${jwtFile}`);
      expect(fs.statSync(jwtFile).mode & 0o777).toBe(0o600);
      const run = (...args: string[]) => new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => execFile(process.execPath, [bin, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr })));
      const listed = await run('identity', 'list');
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(/quickstart-device\s+Default/);
      // The printed next steps carry bytes: enroll both demo identities, host the echo, dial it (the C SDK).
      expect(out).toMatch(/edge router\s+tls:\/\/localhost:\d+/);
      const steps = out.split('\n').filter((l) => /^  (\S*ztc enroll|python3 \S+echo-demo\.py)/.test(l)).map((l) => l.trim().replace(/ &$/, ''));
      expect(steps).toHaveLength(4);
      for (const step of steps.slice(0, 2)) {
        const enrolled = await run(...step.split(' ').slice(1));
        expect(enrolled.code, enrolled.stderr).toBe(0);
      }
      expect(JSON.parse(fs.readFileSync(path.join(dir, 'quickstart-device.json'), 'utf8')).id.cert).toContain('BEGIN CERTIFICATE');
      const [hostCmd, dialCmd] = steps.slice(2).map((l) => l.split(' ').slice(1));
      const host = tracked(spawn('python3', hostCmd, { env: { ...env, ZITI_LOG: '1' } }));
      try {
        await new Promise<void>((resolve) => host.stdout.on('data', (d: Buffer) => d.toString().includes('listening') && resolve()));
        const run2 = () => new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => execFile('python3', dialCmd, { env: { ...env, ZITI_LOG: '1' }, timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? 1 : 0, stdout, stderr })));
        // The host's bind reaches the router a moment after it listens.
        let dialed = await run2();
        for (let i = 0; i < 20 && dialed.code !== 0; i++) {
          await new Promise((r) => setTimeout(r, 250));
          dialed = await run2();
        }
        expect(dialed.code, dialed.stderr).toBe(0);
        expect(JSON.parse(dialed.stdout.trim())).toMatchObject({ sent: 1048576, received: 1048576, match: true });
      } finally {
        host.kill('SIGKILL');
      }
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
