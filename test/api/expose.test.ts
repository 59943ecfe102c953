// POST /services/expose and DELETE /services/{id}/expose (our extension): a whole service with its
// configs and policies in one transaction, usable by a client at once, and removed exactly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

describe('service expose and unexpose', () => {
  let c: TestController;
  let token: string;
  const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token, body });
  const names = async (path: string, filter: string) => ((await mg('GET', `${path}?filter=${encodeURIComponent(filter)}`)).body.data as { name: string }[]).map((r) => r.name).sort();
  const full = {
    name: 'web',
    intercept: { addresses: ['web.internal'], portRanges: [{ low: 443, high: 443 }] },
    host: { protocol: 'tcp', address: '10.0.0.5', port: 443 },
    dialRoles: ['#staff'],
    bindRoles: ['@server-01'],
    edgeRouterRoles: ['#public'],
  };

  beforeAll(async () => {
    c = await startTestController();
    token = await c.login();
    const ana = await c.user('ana.lima');
    expect((await mg('PATCH', `/identities/${ana}`, { roleAttributes: ['staff'] })).status).toBe(200);
    expect((await mg('POST', '/identities', { name: 'server-01', type: 'Device', isAdmin: false })).status).toBe(201);
    expect((await mg('POST', '/edge-routers', { name: 'er-1', roleAttributes: ['public'] })).status).toBe(201);
  });
  afterAll(() => c.close());

  it('makes the configs, the service and its policies, which a client can use at once', async () => {
    const r = await mg('POST', '/services/expose', full);
    expect(r.status).toBe(201);
    expect(r.body.data.service).toMatchObject({ kind: 'service', name: 'web' });
    expect(r.body.data.made.map((m: { kind: string; name: string }) => `${m.kind} ${m.name}`)).toEqual([
      'config web-intercept-config',
      'config web-host-config',
      'service web',
      'service-policy web-dial-policy',
      'service-policy web-bind-policy',
      'service-edge-router-policy web-service-edge-router-policy',
    ]);
    const service = (await mg('GET', `/services/${r.body.data.service.id}`)).body.data;
    expect(service.configs).toHaveLength(2);
    const host = (await mg('GET', `/configs?filter=${encodeURIComponent('name = "web-host-config"')}`)).body.data[0];
    expect(host.data).toEqual({ protocol: 'tcp', address: '10.0.0.5', port: 443 });
    const bind = (await mg('GET', `/service-policies?filter=${encodeURIComponent('name = "web-bind-policy"')}`)).body.data[0];
    expect(bind).toMatchObject({ type: 'Bind', semantic: 'AnyOf', serviceRoles: [`@${service.id}`] });
    expect(bind.identityRolesDisplay).toEqual([{ role: expect.stringMatching(/^@/), name: '@server-01' }]);

    // ana (#staff) sees it with Dial, its intercept config, and er-1 to reach it.
    const anaToken = await c.login('ana.lima', 'password1');
    const seen = await c.call('GET', `${CLIENT}/services?configTypes=all`, { token: anaToken });
    const web = seen.body.data.find((s: { name: string }) => s.name === 'web');
    expect(web.permissions).toEqual(['Dial']);
    expect(web.config['intercept.v1']).toMatchObject({ addresses: ['web.internal'] });
    const routers = await c.call('GET', `${CLIENT}/services/${service.id}/edge-routers`, { token: anaToken });
    expect(routers.status).toBe(200);
  });

  it('writes nothing when any part is refused', async () => {
    const before = await names('/configs', 'true');
    const unknownRole = await mg('POST', '/services/expose', { ...full, name: 'api', bindRoles: ['@nobody-here'] });
    expect(expectError(unknownRole, 400).message).toMatch(/nobody-here/);
    const taken = await mg('POST', '/services/expose', full);
    expect(expectError(taken, 400).message).toMatch(/unique/);
    expect(await names('/configs', 'true')).toEqual(before);
    expect(await names('/services', 'name = "api"')).toEqual([]);
    expect(await names('/service-policies', 'name contains "api-"')).toEqual([]);
  });

  it('refuses input that says nothing or makes no sense, naming the field', async () => {
    expectError(await mg('POST', '/services/expose', { name: 'empty' }), 400, 'COULD_NOT_VALIDATE');
    const range = expectError(await mg('POST', '/services/expose', { name: 'r', intercept: { addresses: ['a'], portRanges: [{ low: 90, high: 80 }] } }), 400);
    expect(range.message).toMatch(/portRanges.*90.*80/);
    expectError(await mg('POST', '/services/expose', { name: 'p', host: { protocol: 'tcp', address: 'x', port: 70000 } }), 400);
    expectError(await mg('POST', '/services/expose', { ...full, name: 'extra', surprise: 1 }), 400);
  });

  it('unexpose removes exactly what expose made', async () => {
    expect((await mg('POST', '/configs', { name: 'keep-me', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'a', port: 1 } })).status).toBe(201);
    expect((await mg('POST', '/services', { name: 'hand-made', encryptionRequired: true })).status).toBe(201);
    const r = await mg('DELETE', '/services/web/expose');
    expect(r.status).toBe(200);
    expect(r.body.data.made.map((m: { kind: string; name: string }) => `${m.kind} ${m.name}`).sort()).toEqual([
      'config web-host-config',
      'config web-intercept-config',
      'service web',
      'service-edge-router-policy web-service-edge-router-policy',
      'service-policy web-bind-policy',
      'service-policy web-dial-policy',
    ]);
    expect(await names('/configs', 'true')).toEqual(['keep-me']);
    expect(await names('/services', 'true')).toEqual(['hand-made']);
    expect(await names('/service-policies', 'true')).toEqual([]);
    expect(expectError(await mg('DELETE', '/services/hand-made/expose'), 400).message).toMatch(/not made by expose/);
    expectError(await mg('DELETE', '/services/web/expose'), 404, 'NOT_FOUND');
    // Only admins.
    const anaToken = await c.login('ana.lima', 'password1');
    expect((await c.call('POST', `${MGMT}/services/expose`, { token: anaToken, body: full })).status).toBe(401);
  });
});
