// `ztc service expose|unexpose` through the built CLI, logged in to a running controller: one command
// for a whole service, what it made printed, the service list showing intercept addresses, and an
// exact undo. (The same commands on a data dir with -d go through the same API in-process.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { cliRunner, loggedInController } from '../helpers/cli.js';

const { ztc, cleanup } = cliRunner();

describe('ztc service expose', { timeout: 180_000 }, () => {
  let running: Running;
  const run = async (...args: string[]) => {
    const r = await ztc(...args);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    return r.stdout;
  };
  beforeAll(async () => {
    running = await loggedInController(ztc);
    await run('identity', 'create', 'server-01', '--type', 'Device', '--enroll', 'none');
  });
  afterAll(async () => {
    await running.close();
    cleanup();
  });

  it('creates the whole service, prints what it made, and lists its intercept addresses', async () => {
    const out = await run('service', 'expose', 'web', '--address', 'web.internal', '--port', '443', '--host', 'tcp:10.0.0.5:443', '--dial', '#staff', '--bind', '@server-01', '--edge-routers', '#public');
    expect(out).toMatch(/^exposed service web; made:$/m);
    expect(out).toMatch(/^KIND\s+NAME\s+ID$/m);
    for (const line of [/^config\s+web-intercept-config\s/m, /^config\s+web-host-config\s/m, /^service\s+web\s/m, /^service-policy\s+web-dial-policy\s/m, /^service-policy\s+web-bind-policy\s/m, /^service-edge-router-policy\s+web-service-edge-router-policy\s/m]) {
      expect(out).toMatch(line);
    }
    expect(out).toMatch(/undo with: ztc service unexpose web/);
    const list = await run('service', 'list');
    expect(list).toMatch(/^ID\s+NAME\s+ENCRYPTION REQUIRED\s+ROLE ATTRIBUTES\s+INTERCEPTS\s+CONFIGS$/m);
    expect(list).toMatch(/\sweb\s+true\s+web\.internal\s+(web-intercept-config, web-host-config|web-host-config, web-intercept-config)$/m);
    const policies = await run('service-policy', 'list');
    expect(policies).toMatch(/web-bind-policy\s+Bind\s+AnyOf\s+@server-01\s+@web/);
  });

  it('refuses bad flags before sending anything, and server refusals leave nothing behind', async () => {
    const port = await ztc('service', 'expose', 'api', '--address', 'api.internal', '--port', '90-80');
    expect(port.code).toBe(1);
    expect(port.stderr).toMatch(/--port: '90-80' is not a port/);
    const host = await ztc('service', 'expose', 'api', '--host', '10.0.0.5');
    expect(host.stderr).toMatch(/--host: '10.0.0.5' is not PROTOCOL:ADDRESS:PORT/);
    const alone = await ztc('service', 'expose', 'api', '--address', 'api.internal');
    expect(alone.stderr).toMatch(/--address and --port go together/);
    const unknown = await ztc('service', 'expose', 'api', '--address', 'api.internal', '--port', '80', '--bind', '@nobody');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/nobody/);
    expect(JSON.parse(await run('config', 'list', '-o', 'json')).map((c: { name: string }) => c.name).sort()).toEqual(['web-host-config', 'web-intercept-config']);
  });

  it('unexpose removes exactly what expose made, as JSON for scripts', async () => {
    const out = JSON.parse(await run('service', 'unexpose', 'web', '-o', 'json'));
    expect(out.made).toHaveLength(6);
    expect(JSON.parse(await run('service', 'list', '-o', 'json'))).toEqual([]);
    expect(JSON.parse(await run('config', 'list', '-o', 'json'))).toEqual([]);
    expect(JSON.parse(await run('identity', 'list', 'name = "server-01"', '-o', 'json'))).toHaveLength(1);
  });
});
