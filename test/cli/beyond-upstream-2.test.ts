// Beyond upstream, second round (issue 47), through the built CLI against a controller over TLS: what
// each item adds, as an operator types it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliRunner, killLeftovers } from '../helpers/cli.js';
import { ADMIN, CLIENT, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

afterAll(killLeftovers);

const cli = cliRunner();
const { ztc } = cli;
let tc: TlsController;
let admin: string;
beforeAll(async () => {
  tc = await startTlsController();
  admin = await tc.login();
  const login = await ztc('login', tc.base, '-u', ADMIN.username, '-p', ADMIN.password, '--yes');
  if (login.code !== 0) throw new Error(`ztc login failed: ${login.stderr}`);
}, 60_000);
afterAll(async () => {
  await tc?.close();
  cli.cleanup();
});

const mg = async (method: string, path: string, body?: unknown) => {
  const r = await tc.call(method, `${MGMT}${path}`, { token: admin, body });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.body?.data;
};

/** An identity that logs in with a password; its id and a client API session's token. */
async function user(name: string, roles: string[]) {
  const id = (await mg('POST', '/identities', { name, type: 'User', isAdmin: false, roleAttributes: roles })).id as string;
  await mg('POST', '/authenticators', { identityId: id, method: 'updb', username: name, password: 'password1' });
  const token = (await tc.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: name, password: 'password1' } })).body.data.token as string;
  return { id, token };
}

describe('posture checks in report-only mode (ziti#2095)', () => {
  it('ztc posture-check create --report-only; the failures in ztc audit and ztc metrics; the session is made', async () => {
    const made = await ztc('posture-check', 'create', 'cli-domain', '--type-id', 'DOMAIN', '--domains', 'corp.example', '--report-only');
    expect(made.code, made.stderr).toBe(0);
    const listed = await ztc('posture-check', 'list');
    expect(listed.stdout).toMatch(/REPORT ?ONLY/i);
    expect(listed.stdout).toMatch(/cli-domain\s+DOMAIN\s+\S*\s*true/);
    expect(JSON.parse((await ztc('posture-check', 'get', 'cli-domain', '-o', 'json')).stdout).reportOnly).toBe(true);
    // Off and on again.
    expect((await ztc('posture-check', 'update', 'cli-domain', '--report-only', 'false')).code).toBe(0);
    expect(JSON.parse((await ztc('posture-check', 'get', 'cli-domain', '-o', 'json')).stdout).reportOnly).toBe(false);
    expect((await ztc('posture-check', 'update', 'cli-domain', '--report-only')).code).toBe(0);
    expect(JSON.parse((await ztc('posture-check', 'get', 'cli-domain', '-o', 'json')).stdout).reportOnly).toBe(true);

    const service = (await mg('POST', '/services', { name: 'cli-ro-web', encryptionRequired: true, roleAttributes: ['cli-ro'] })).id as string;
    await mg('POST', '/service-policies', { name: 'cli-ro-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#cli-ro'], serviceRoles: ['#cli-ro'], postureCheckRoles: ['@cli-domain'] });
    const u = await user('cli-ro-user', ['cli-ro']);
    const session = await tc.call('POST', `${CLIENT}/sessions`, { token: u.token, body: { serviceId: service, type: 'Dial' } });
    expect(session.status, session.text).toBe(201);
    await tc.running.ctx.events.flush();
    const audit = await ztc('audit', '--type', 'posture', '--entity', 'cli-ro-user');
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout).toMatch(/posture reported\s+Dial cli-ro-web \[\S+\]\s+identity \S+\s+failing cli-domain \(report-only\)/);
    const metrics = await ztc('metrics', 'ztc_posture_check_failures_total');
    expect(metrics.stdout).toMatch(/ztc_posture_check_failures_total\{check=cli-domain, type=DOMAIN, mode=report-only\}\s+1\n/);
  });
});
