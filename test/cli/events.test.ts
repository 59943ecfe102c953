// ztc events --follow and ztc audit through the built CLI, against a running controller: a policy
// change appears on the followed stream (table lines, and JSON lines with -o json) and in the audit
// with who changed it, what changed, and no secret.
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { bin, cliRunner, loggedInController, killLeftovers, tracked } from '../helpers/cli.js';
import { ADMIN } from '../helpers/controller.js';

// A failing test must not leave the processes it started running.
afterAll(killLeftovers);

const { ztc, home, cleanup } = cliRunner();
let running: Running | undefined;
afterAll(async () => {
  await running?.close();
  cleanup();
});

/** Start `ztc events --follow ...`; its stdout so far, and a way to stop it. */
function follow(...args: string[]) {
  const child = tracked(spawn(process.execPath, [bin, 'events', '--follow', ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '' } }));
  const out = { text: '', stderr: '' };
  child.stdout.on('data', (d) => (out.text += d));
  child.stderr.on('data', (d) => (out.stderr += d));
  return { out, stop: () => child.kill('SIGTERM') };
}

async function until(cond: () => boolean, ms = 10_000) {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
}

describe('ztc events and ztc audit', () => {
  it('follow a policy change live and find it in the audit with who, what and no secret', async () => {
    running = await loggedInController(ztc);
    const events = running.ctx.events;
    // The controller's own subscribers (the metrics count events) are there before the streams.
    const before = events.subscriberCount;
    const table = follow('--type', 'entityChange');
    const json = follow('--type', 'entityChange,authentication', '-o', 'json');
    await until(() => events.subscriberCount >= before + 2);
    expect(events.subscriberCount, table.out.stderr + json.out.stderr).toBeGreaterThanOrEqual(before + 2);

    const made = await ztc('service-policy', 'create', 'cli-dial', '--type', 'Dial', '--identity-roles', '#staff', '--service-roles', '#web');
    expect(made.code, made.stderr).toBe(0);
    const changed = await ztc('service-policy', 'update', 'cli-dial', '--identity-roles', '#staff,#ops');
    expect(changed.code, changed.stderr).toBe(0);
    await until(() => table.out.text.includes('updated') && json.out.text.split('\n').filter(Boolean).length >= 2);
    table.stop();
    json.stop();

    expect(table.out.text).toMatch(/servicePolicies created\s+cli-dial \[\w+\]\s+by Default Admin from 127\.0\.0\.1/);
    expect(table.out.text).toMatch(/servicePolicies updated\s+cli-dial .*changed .*identityRoles/);
    const lines = json.out.text.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((e) => `${e.entityName}:${e.eventType}`)).toEqual(expect.arrayContaining(['cli-dial:created', 'cli-dial:updated']));

    const audit = await ztc('audit', '--entity', 'cli-dial', '--since', '1h', '-o', 'json');
    expect(audit.code, audit.stderr).toBe(0);
    const [updated] = JSON.parse(audit.stdout);
    expect(updated).toMatchObject({ eventType: 'updated', metadata: { author: { name: 'Default Admin' } }, });
    expect([...updated.finalState.identityRoles].sort()).toEqual(['#ops', '#staff']);
    expect(updated.initialState.identityRoles).toEqual(['#staff']);
    const people = await ztc('audit', '--entity', 'cli-dial');
    expect(people.stdout.trim().split('\n')).toHaveLength(2);
    expect(people.stdout).toContain('by Default Admin');
    const yaml = await ztc('audit', '--entity', 'cli-dial', '-o', 'yaml');
    expect(yaml.stdout).toContain('eventType: updated');
    // A misspelt name: nothing, and the answer says which name found nothing and to check it.
    const none = await ztc('audit', '--entity', 'cli-dail');
    expect(none.stdout).toMatch(/^no events recorded for entity 'cli-dail' \(its id, or its name when the event happened: check the spelling\)/);

    for (const text of [table.out.text, json.out.text, audit.stdout]) expect(text).not.toContain(ADMIN.password);
    const bad = await ztc('audit', '--since', 'last-week');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/since/);
  }, 120_000);
});
