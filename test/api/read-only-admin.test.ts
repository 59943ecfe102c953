// Read-only admins (the admin_readonly permission, as upstream 2.x names it): every admin route that
// reads answers them, every admin route that changes anything refuses them with 403, and nothing
// changes. The routes come from the route table, so new routes are covered without editing this test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, MGMT, expectError, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
let readOnly: string;
let readOnlyId: string;

beforeAll(async () => {
  c = await startTestController({ config: { authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 } });
  admin = await c.login();
  readOnlyId = await c.user('auditor');
  expect((await c.call('PATCH', `${MGMT}/identities/${readOnlyId}`, { token: admin, body: { permissions: ['admin_readonly'] } })).status).toBe(200);
  readOnly = await c.login('auditor', 'password1');
  // Something to read: a service no policy grants to anyone.
  expect((await c.call('POST', `${MGMT}/services`, { token: admin, body: { name: 'ledger', encryptionRequired: true } })).status).toBe(201);
});
afterAll(() => c.close());

describe('read-only admins', () => {
  it('hold the permission on the identity, and only permission names upstream defines are accepted', async () => {
    const me = await c.call('GET', `${MGMT}/identities/${readOnlyId}`, { token: admin });
    expect(me.body.data.permissions).toEqual(['admin_readonly']);
    expect(me.body.data.isAdmin).toBe(false);
    expectError(await c.call('PATCH', `${MGMT}/identities/${readOnlyId}`, { token: admin, body: { permissions: ['service.fly'] } }), 400);
    const other = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'plain', type: 'User', isAdmin: false } });
    expect((await c.call('GET', `${MGMT}/identities/${other.body.data.id}`, { token: admin })).body.data.permissions).toEqual([]);
  });

  it('read every admin route and change nothing through any of them', async () => {
    const summary = async () => (await c.call('GET', `${MGMT}/summary`, { token: admin })).body.data;
    const before = await summary();
    // The live event stream never ends by itself: its read-only access is checked in events.test.ts.
    const routes = c.app.routeTable.routes.filter((r) => r.access === 'admin' && r.url !== `${MGMT}/events`);
    expect(routes.length).toBeGreaterThan(150);
    const counts = { reads: 0, writes: 0 };
    for (const r of routes) {
      const url = r.url.replace(/:\w+/g, 'ro-id').replace(/\*$/, 'x');
      const write = !['GET', 'HEAD'].includes(r.method);
      const res = await c.call(r.method, url, { token: readOnly, body: write ? {} : undefined });
      const label = `${r.method} ${r.url} -> ${res.status} ${res.text.slice(0, 200)}`;
      expect(res.status, label).toBeLessThan(500);
      if (write) {
        expect(res.status, label).toBe(403);
        expect(res.body.error.code, label).toBe('UNAUTHORIZED');
        expect(res.body.error.message, label).toMatch(/read-only admin/);
        counts.writes++;
      } else {
        expect([401, 403], label).not.toContain(res.status);
        // A list (no id in the path) answers 200 outright.
        if (!r.url.includes(':')) expect(res.status, label).toBe(200);
        counts.reads++;
      }
    }
    expect(counts.writes).toBeGreaterThan(80);
    expect(counts.reads).toBeGreaterThan(80);
    expect(await summary()).toEqual(before);
  }, 120_000);

  it('see what an admin sees, on the management and the client API, and scrape the metrics', async () => {
    const services = await c.call('GET', `${MGMT}/services`, { token: readOnly });
    expect(services.body.data.map((s: { name: string }) => s.name)).toContain('ledger');
    const asClient = await c.call('GET', `${CLIENT}/services`, { token: readOnly });
    expect(asClient.body.data.map((s: { name: string }) => s.name)).toContain('ledger');
    expect((await c.call('GET', `${MGMT}/identities/${readOnlyId}`, { token: readOnly })).status).toBe(200);
    expect((await c.call('GET', '/metrics', { token: readOnly })).status).toBe(200);
  });

  it('cannot grant themselves more, while their own account stays theirs (MFA, password, logout)', async () => {
    expectError(await c.call('PATCH', `${MGMT}/identities/${readOnlyId}`, { token: readOnly, body: { isAdmin: true } }), 403, 'UNAUTHORIZED');
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token: readOnly })).body.data.permissions).toEqual(['admin_readonly']);
    // An identity without the permission still gets 401 on admin routes, as before.
    await c.user('nobody');
    const nobody = await c.login('nobody', 'password1');
    expectError(await c.call('GET', `${MGMT}/identities`, { token: nobody }), 401, 'UNAUTHORIZED');
    expect((await c.call('DELETE', `${CLIENT}/current-api-session`, { token: readOnly })).status).toBe(200);
  });

  it('are full admins again when the permission goes and isAdmin is set', async () => {
    expect((await c.call('PATCH', `${MGMT}/identities/${readOnlyId}`, { token: admin, body: { permissions: [], isAdmin: true } })).status).toBe(200);
    const now = await c.login('auditor', 'password1');
    expect((await c.call('POST', `${MGMT}/services`, { token: now, body: { name: 'by-auditor', encryptionRequired: true } })).status).toBe(201);
  });
});
