// Stumbles of a newcomer's first hour (../shared/reports/newcomer-2026-11-24.md), through the built CLI:
// boolean flags never save a silent false, global options go before the command too, a --filter
// says filters are the list's argument, and a stopped controller is named as such.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { cliRunner, loggedInController } from '../helpers/cli.js';

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

  it('takes --profile and -o before the command, as kubectl users type them', async () => {
    const listed = await ztc('-o', 'json', '--profile', 'default', 'identity', 'list');
    expect(listed.code, listed.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(listed.stdout))).toBe(true);
  });

  it('says that a filter is the list\'s argument when given --filter', async () => {
    const r = await ztc('identity', 'list', '--filter', 'type = "Device"');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/a filter is the list's argument, not an option/);
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
  });
});
