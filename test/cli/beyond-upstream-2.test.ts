// Beyond upstream, second round (issue 47), through the built CLI against a controller over TLS: what
// each item adds, as an operator types it.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bin, cliRunner, killLeftovers, tracked } from '../helpers/cli.js';
import { CT, H, le32, one } from '../peers/edge-sdk.js';
import { ADMIN, CLIENT, MGMT } from '../helpers/controller.js';
import { startNetwork, type TestNetwork } from '../helpers/network.js';
import type { TlsController } from '../helpers/tls.js';

afterAll(killLeftovers);

const cli = cliRunner();
const { ztc } = cli;
let n: TestNetwork;
let tc: TlsController;
let admin: string;
beforeAll(async () => {
  n = await startNetwork();
  tc = n.c;
  admin = n.admin;
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

/** `ztc events --follow ARGS` in the background: what it printed so far, and a way to stop it. */
function follow(...args: string[]) {
  const child = tracked(spawn(process.execPath, [bin, 'events', '--follow', ...args], { env: { ...process.env, ZTC_HOME: cli.home, ZTC_DATA_DIR: '' } }));
  const out = { text: '', stderr: '' };
  child.stdout.on('data', (d) => (out.text += d));
  child.stderr.on('data', (d) => (out.stderr += d));
  return { out, stop: () => child.kill('SIGTERM') };
}
async function until(cond: () => boolean, ms = 10_000) {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
}

describe('failed authentication visible (ziti#1834)', () => {
  it('a refused login in ztc audit with why, ztc metrics counting it; a failed TLS handshake on ztc events', async () => {
    await user('cli-fa', []);
    const refused = await ztc('login', tc.base, '-u', 'cli-fa', '-p', 'not-the-password', '--yes', '--legacy', '--profile', 'cli-fa');
    expect(refused.code).not.toBe(0);
    await tc.running.ctx.events.flush();
    const audit = await ztc('audit', '--type', 'authentication', '--entity', 'cli-fa');
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout).toMatch(/login fail\s+updb cli-fa \[\S+\]\s+from 127\.0\.0\.1\s+INVALID_AUTH: .*\(wrong-password\)/);
    expect(audit.stdout).not.toContain('not-the-password');
    const logins = await ztc('metrics', 'ztc_logins_failed_total');
    expect(logins.stdout).toMatch(/ztc_logins_failed_total\{method=password, reason=wrong-password\}\s+1\n/);

    const events = follow('--type', 'tls');
    await until(() => events.out.stderr.includes('following events'));
    await new Promise<void>((resolve) => {
      const s = net.connect(tc.running.ctx.config.port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\n\r\n'));
      s.on('close', () => resolve());
      s.on('error', () => resolve());
    });
    await until(() => events.out.text.includes('handshake-failed'));
    events.stop();
    expect(events.out.text).toMatch(/tls handshake-failed\s+api port\s+from 127\.0\.0\.1\s+not-tls ERR_SSL_HTTP_REQUEST/);
    const tls = await ztc('metrics', 'ztc_tls_handshakes_failed_total');
    expect(tls.stdout).toMatch(/ztc_tls_handshakes_failed_total\{listener=api, reason=not-tls\}\s+1\n/);
  }, 60_000);
});

describe('who is online (ziti#4376)', () => {
  it('ztc identity list --online: the identities with an SDK on an edge router now, with the filter and in the table', async () => {
    const ana = await n.identity('cli-online-ana');
    await n.identity('cli-online-bo');
    const online = async (...args: string[]) => JSON.parse((await ztc('identity', 'list', '--online', '-o', 'json', ...args)).stdout).map((i: { name: string }) => i.name);
    expect(await online()).toEqual([]);
    const peer = await n.peer(ana);
    await expect.poll(() => online(), { timeout: 5000 }).toEqual(['cli-online-ana']);
    // With a filter of its own, and its sort.
    expect(await online('name contains "cli-online" sort by name desc')).toEqual(['cli-online-ana']);
    expect(await online('name = "cli-online-bo"')).toEqual([]);
    const table = await ztc('identity', 'list', '--online');
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/ONLINE/);
    expect(table.stdout).toMatch(/cli-online-ana .*true/);
    expect(table.stdout).toMatch(/1-1 of 1/);
    const all = await ztc('identity', 'list', 'name contains "cli-online"');
    expect(all.stdout).toMatch(/cli-online-bo .*false/);
    expect((await ztc('identity', 'list', '--help')).stdout).toMatch(/--online\s+only identities with an SDK connected to an edge router/);
    peer.close();
    await expect.poll(() => online(), { timeout: 5000 }).toEqual([]);
  }, 60_000);
});

describe('an access log that names the grant (edge#227)', () => {
  it('ztc audit --entity SERVICE --type session: who reached it, granted by which policies; a refusal and what was missing; ztc events shows the circuit with its grant', async () => {
    const service = await n.service('cli-log');
    const host = await n.identity('cli-log-host', ['cli-log-hosts']);
    const client = await n.identity('cli-log-client', ['cli-log-clients']);
    const stranger = await n.identity('cli-log-stranger');
    expect((await tc.call('POST', `${CLIENT}/sessions`, { token: stranger.token, body: { serviceId: service, type: 'Dial' } })).status).toBe(404);
    const circuits = follow('--type', 'circuit');
    await until(() => circuits.out.stderr.includes('following events'));
    // A circuit: the host binds, the client dials.
    const h = await n.peer(host);
    expect((await h.replyTo(h.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.RouterProvidedConnId, one]], Buffer.from(await n.session(host, service, 'Bind'))))).type).toBe(CT.StateConnected);
    const d = await n.peer(client);
    const connect = d.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(await n.session(client, service, 'Dial')));
    const dial = await h.next((f) => f.type === CT.Dial);
    h.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], le32(dial.headers.get(H.RouterProvidedConnId)!.readUInt32LE(0)));
    expect((await d.replyTo(connect)).type).toBe(CT.StateConnected);
    await until(() => circuits.out.text.includes('circuit created'));
    circuits.stop();
    expect(circuits.out.text).toMatch(new RegExp(`circuit created\\s+\\S+\\s+identity ${client.id}\\s+service ${service}\\s+path \\S+\\s+granted by service-policy cli-log-dial; edge-router-policy all; service-edge-router-policy all`));
    d.close();
    h.close();

    await tc.running.ctx.events.flush();
    const audit = await ztc('audit', '--entity', 'cli-log', '--type', 'session');
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout).toMatch(/session created\s+Dial \S+\s+identity cli-log-client\s+service cli-log\s+granted by service-policy cli-log-dial; edge-router-policy all; service-edge-router-policy all/);
    expect(audit.stdout).toMatch(/session created\s+Bind \S+\s+identity cli-log-host\s+service cli-log\s+granted by service-policy cli-log-bind/);
    expect(audit.stdout).toMatch(/session refused\s+Dial\s+identity cli-log-stranger\s+service cli-log\s+missing: no Dial service policy grants identity 'cli-log-stranger' service 'cli-log'/);
    const mine = await ztc('audit', '--actor', 'cli-log-client', '--type', 'session', '-o', 'json');
    expect(JSON.parse(mine.stdout).map((e: { service_name: string; event_type: string }) => `${e.event_type} ${e.service_name}`)).toEqual(['created cli-log']);
  }, 60_000);
});
