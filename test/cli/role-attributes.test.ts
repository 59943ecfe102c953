// `ztc <kind> role-attributes`: the built CLI lists a kind's role attributes with where they are used
// (GET /<kind>-role-attribute-usage, 2.1), as a table for people and the API's rows for scripts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../../src/server/controller.js';
import { cliRunner, killLeftovers, loggedInController } from '../helpers/cli.js';

const cli = cliRunner();

describe('ztc <kind> role-attributes', { timeout: 180_000 }, () => {
  let running: Running;
  beforeAll(async () => {
    running = await loggedInController(cli.ztc);
    for (const change of [
      ['identity', 'create', 'ra-alice', '--role-attributes', 'ra-staff,ra-eu'],
      ['service', 'create', 'ra-web', '--role-attributes', 'ra-web'],
      ['service-policy', 'create', 'ra-dial', '--type', 'Dial', '--identity-roles', '#ra-staff,#ra-contractors', '--service-roles', '#ra-web'],
    ]) {
      const r = await cli.ztc(...change);
      expect(r.code, `${change.join(' ')}: ${r.stderr}`).toBe(0);
    }
  });
  afterAll(async () => {
    await running?.close();
    cli.cleanup();
    killLeftovers();
  });

  it('a table of attributes with a count per source, filtered', async () => {
    const r = await cli.ztc('identity', 'role-attributes', 'id contains "ra-" sort by id');
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => /ra-/.test(l));
    expect(lines.map((l) => l.trim().split(/\s+/))).toEqual([
      ['ra-contractors', '0', '1', '0'],
      ['ra-eu', '1', '0', '0'],
      ['ra-staff', '1', '1', '0'],
    ]);
    expect(r.stdout).toMatch(/ROLE ATTRIBUTE\s+IDENTITIES\s+SERVICE POLICIES\s+EDGE ROUTER POLICIES/i);
  });

  it('-o json gives the API\'s rows; --with-ids the ids', async () => {
    const r = await cli.ztc('service', 'role-attributes', '--filter', 'id = "ra-web"', '--with-ids', '-o', 'json');
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ roleAttribute: 'ra-web', usage: { services: { count: 1 }, servicePolicies: { count: 1 }, serviceEdgeRouterPolicies: { count: 0, ids: [] } } });
    expect(rows[0].usage.services.ids).toHaveLength(1);
    for (const kind of ['edge-router', 'posture-check']) {
      const k = await cli.ztc(kind, 'role-attributes', '-o', 'json');
      expect(k.code, `${kind}: ${k.stderr}`).toBe(0);
      expect(Array.isArray(JSON.parse(k.stdout))).toBe(true);
    }
  });
});
