// Stumbles of a newcomer's first hour, third pass (../shared/reports/newcomer-2026-11-28.md, issue 45),
// through the built CLI: complete audit answers by name, and the smaller ones.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { cliRunner, killLeftovers, loggedInController } from '../helpers/cli.js';

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

describe('the first hour, third pass', () => {
  it("ztc audit --entity NAME prints what --entity ID prints: an identity's enrollment and logins too", async () => {
    // As the report did: an ott identity, enrolled with ztc enroll, logging in with its certificate.
    const jwt = path.join(cli.home, 'web-host.jwt');
    const made = await ztc('identity', 'create', 'web-host', '-o', jwt);
    expect(made.code, made.stderr).toBe(0);
    const file = path.join(cli.home, 'web-host.json');
    const enrolled = await ztc('enroll', jwt, '--out', file);
    expect(enrolled.code, enrolled.stderr).toBe(0);
    const login = await ztc('login', '--identity', file, '--profile', 'web-host');
    expect(login.code, login.stderr).toBe(0);
    await running.ctx.events.flush();
    const id = JSON.parse((await ztc('identity', 'get', 'web-host', '-o', 'json')).stdout).id as string;
    const byId = await ztc('audit', '--entity', id);
    expect(byId.code, byId.stderr).toBe(0);
    expect(byId.stdout).toMatch(/login success\s+cert/);
    expect(byId.stdout).toMatch(/enrollment success\s+ott/);
    expect(byId.stdout).toMatch(/identities created\s+web-host/);
    const byName = await ztc('audit', '--entity', 'web-host');
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toBe(byId.stdout);
    // Revoked: its refused certificate logins are in its audit, by name and by id.
    expect((await ztc('identity', 'disable', 'web-host')).code).toBe(0);
    const refused = await ztc('login', '--identity', file, '--profile', 'web-host');
    expect(refused.code).not.toBe(0);
    await running.ctx.events.flush();
    for (const entity of ['web-host', id]) {
      const audit = await ztc('audit', '--entity', entity, '--type', 'authentication');
      expect(audit.stdout).toMatch(new RegExp(`login fail\\s+cert \\[${id}\\]\\s+from \\S+\\s+INVALID_AUTH`));
      // Not under the username the client's login sent by default (admin).
      expect(audit.stdout).not.toMatch(/cert admin/);
    }
  });

  it('takes a global --profile (and -o, -d) before a command that has no use for it, such as enroll', async () => {
    const jwt = path.join(cli.home, 'pg-device.jwt');
    expect((await ztc('identity', 'create', 'pg-device', '-o', jwt)).code).toBe(0);
    const enrolled = await ztc('--profile', 'default', 'enroll', jwt, '--out', path.join(cli.home, 'pg-device.json'));
    expect(enrolled.code, enrolled.stderr).toBe(0);
    expect(enrolled.stdout).toMatch(/enrolled: identity file written to/);
    // Commands that take them still get them, from before the command too.
    const listed = await ztc('--profile', 'default', '-o', 'json', 'identity', 'list');
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).some((i: { name: string }) => i.name === 'pg-device')).toBe(true);
    const noProfile = await ztc('--profile', 'nowhere', 'identity', 'list');
    expect(noProfile.code).not.toBe(0);
    expect(noProfile.stderr).toMatch(/nowhere/);
  });

  it('reads the metrics: ztc metrics, and ztc api GET /metrics as the controller serves them', async () => {
    await ztc('identity', 'list');
    const all = await ztc('metrics');
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^ztc_http_requests_total\{.*\}\s+\d+$/m);
    expect(all.stdout).not.toMatch(/^# /m);
    const requests = await ztc('metrics', 'ztc_http_requests_total', 'ztc_api_sessions');
    expect(requests.code, requests.stderr).toBe(0);
    expect(requests.stdout).toMatch(/^ztc_http_requests_total\{method=GET, route=\/edge\/management\/v1\/identities, status=200\}\s+[1-9]\d*$/m);
    expect(requests.stdout).toMatch(/^ztc_api_sessions\s+[1-9]\d*$/m);
    expect(requests.stdout.split('\n').filter(Boolean).every((l) => /^ztc_(http_requests_total|api_sessions)\b/.test(l))).toBe(true);
    const json = JSON.parse((await ztc('metrics', 'ztc_http_requests_total', '-o', 'json')).stdout) as { name: string; labels: Record<string, string>; value: number }[];
    const listed = json.find((s) => s.labels.route === '/edge/management/v1/identities' && s.labels.method === 'GET' && s.labels.status === '200');
    expect(listed).toMatchObject({ name: 'ztc_http_requests_total' });
    expect(listed!.value).toBeGreaterThan(0);
    const raw = await ztc('metrics', '--raw', 'ztc_http_requests_total');
    expect(raw.stdout).toMatch(/^# TYPE ztc_http_requests_total counter$/m);
    expect(raw.stdout).not.toMatch(/ztc_api_sessions/);
    const api = await ztc('api', 'GET', '/metrics');
    expect(api.code, api.stderr).toBe(0);
    expect(api.stdout).toMatch(/^# HELP ztc_http_requests_total /m);
    const health = await ztc('api', 'GET', '/health-checks', '-o', 'json');
    expect(health.code, health.stderr).toBe(0);
    expect(JSON.parse(health.stdout).healthy).toBe(true);
    const local = await ztc('metrics', '-d', running.ctx.config.dataDir);
    expect(local.code).not.toBe(0);
    expect(local.stderr).toMatch(/counted by the running controller/);
  });

  it('shows whether each edge router is online in ztc edge-router list', async () => {
    expect((await ztc('edge-router', 'create', 'er-offline')).code).toBe(0);
    const r = await ztc('edge-router', 'list');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+ONLINE\s+IS VERIFIED/);
    expect(r.stdout).toMatch(/\ser-offline\s+false\s+false/);
  });

  it('takes --filter on a list, as upstream\'s CLI does', async () => {
    const byOption = await ztc('identity', 'list', '--filter', 'name = "pg-device"', '-o', 'json');
    expect(byOption.code, byOption.stderr).toBe(0);
    expect(JSON.parse(byOption.stdout).map((i: { name: string }) => i.name)).toEqual(['pg-device']);
    const byArgument = await ztc('identity', 'list', 'name = "pg-device"', '-o', 'json');
    expect(byArgument.stdout).toBe(byOption.stdout);
    const table = await ztc('identity', 'list', '--filter=name contains "pg-"');
    expect(table.stdout).toMatch(/pg-device/);
    const both = await ztc('identity', 'list', 'name = "a"', '--filter', 'name = "b"');
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/Two filters: give it once/);
  });

  it('says in quickstart --help what it makes', async () => {
    const help = await ztc('quickstart', '--help');
    expect(help.stdout.replace(/\s+/g, ' ')).toMatch(/demo network that carries traffic \(an echo service and its policies, a host and a device identity/);
    expect(help.stdout).not.toMatch(/sample identity/);
    expect((await ztc('--help')).stdout).toMatch(/quickstart .*demo network/);
  });

  it('writes a router config for OpenZiti\'s router with edge-router create --router-config, and its JWT beside it', async () => {
    const dir = fs.mkdtempSync(path.join(cli.home, 'routers-'));
    const file = path.join(dir, 'er-conf.yml');
    const made = await ztc('edge-router', 'create', 'er-conf', '--role-attributes', 'public', '--router-config', file);
    expect(made.code, made.stderr).toBe(0);
    const ctrlAddress = JSON.parse((await ztc('api', 'GET', '/controllers', '-o', 'json')).stdout)[0].ctrlAddress as string;
    expect(ctrlAddress).toBe(`tls:localhost:${running.fabric!.ctrlPort}`);
    expect(made.stdout).toContain(`edge router ${JSON.parse((await ztc('edge-router', 'get', 'er-conf', '-o', 'json')).stdout).id}: enrollment JWT written to ${path.join(dir, 'er-conf.jwt')}`);
    expect(made.stdout).toContain(`ziti router enroll ${file} --jwt ${path.join(dir, 'er-conf.jwt')}\n  ziti router run ${file}\n`);
    expect(fs.readFileSync(path.join(dir, 'er-conf.jwt'), 'utf8')).toMatch(/^ey/);
    const config = YAML.parse(fs.readFileSync(file, 'utf8'));
    expect(config).toMatchObject({
      v: 3,
      identity: { cert: path.join(dir, 'er-conf.cert'), server_cert: path.join(dir, 'er-conf.server.chain.cert'), key: path.join(dir, 'er-conf.key'), ca: path.join(dir, 'er-conf.cas') },
      ctrl: { endpoint: ctrlAddress },
      link: { dialers: [{ binding: 'transport' }], listeners: [{ binding: 'transport', bind: 'tls:0.0.0.0:10080', advertise: 'tls:localhost:10080' }] },
      listeners: [{ binding: 'edge', address: 'tls:0.0.0.0:3022', options: { advertise: 'localhost:3022' } }],
      edge: { csr: { sans: { dns: ['localhost'], ip: ['127.0.0.1', '::1'] } } },
    });
    // No tunnel listener unless asked (upstream's generator adds one by default; it needs the edge router tunneler-enabled).
    expect(config.listeners.some((l: { binding: string }) => l.binding === 'tunnel')).toBe(false);
    // A second router beside it gets the next ports; --tunneler-mode host asks for the tunnel listener, with a note.
    const second = await ztc('edge-router', 'config', 'er-conf', path.join(dir, 'again.yml'), '--router-host', 'er.example.com', '--tunneler-mode', 'host', '--link-port', '0');
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/the router's tunneler \(mode host\) acts as its Router identity: the edge router must be tunneler-enabled/);
    const again = YAML.parse(fs.readFileSync(path.join(dir, 'again.yml'), 'utf8'));
    expect(again.link.listeners).toBeUndefined();
    expect(again.listeners).toEqual([
      { binding: 'edge', address: 'tls:0.0.0.0:3022', options: { advertise: 'er.example.com:3022' } },
      { binding: 'tunnel', options: { mode: 'host' } },
    ]);
    expect(again.edge.csr.sans.dns).toEqual(['localhost', 'er.example.com']);
    // --router-bind: the listeners on that address only (advertised as before).
    const local = await ztc('edge-router', 'config', 'er-conf', path.join(dir, 'local.yml'), '--router-bind', '127.0.0.1', '--link-port', '0');
    expect(local.code, local.stderr).toBe(0);
    expect(YAML.parse(fs.readFileSync(path.join(dir, 'local.yml'), 'utf8')).listeners[0].address).toMatch(/^tls:127\.0\.0\.1:\d+$/);
    // A directory that does not exist: refused before the router is made.
    const nowhere = await ztc('edge-router', 'create', 'er-nowhere', '--router-config', path.join(dir, 'no', 'such', 'r.yml'));
    expect(nowhere.code).not.toBe(0);
    expect(nowhere.stderr).toMatch(/--router-config .*: no directory/);
    expect((await ztc('edge-router', 'get', 'er-nowhere')).code).not.toBe(0);
  });

});
