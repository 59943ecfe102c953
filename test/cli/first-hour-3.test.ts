// Stumbles of a newcomer's first hour, third pass (../shared/reports/newcomer-2026-11-28.md, issue 45),
// through the built CLI: complete audit answers by name, and the smaller ones.
import path from 'node:path';
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
  });
});
