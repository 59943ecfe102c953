// The access log's sessions that offer no edge router (edge#227, issue 47 item 4): made, as upstream
// makes them, and saying what they lack: no service edge router policy for the service, or no edge
// router policy giving the identity one of the service's routers. (The rest of the access log, with the
// data plane: test/fabric/access-log.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZtcEvent } from '../../src/model/events/types.js';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
let user: string;
let token: string;
const heard: ZtcEvent[] = [];
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  c.opened.ctx.events.subscribe((e) => heard.push(e));
  user = await c.user('log-user');
  await mg('PATCH', `/identities/${user}`, { roleAttributes: ['staff'] });
  await mg('POST', '/edge-routers', { name: 'log-er', roleAttributes: ['public'] });
  await mg('POST', '/services', { name: 'log-svc', encryptionRequired: true, roleAttributes: ['web'] });
  await mg('POST', '/service-policies', { name: 'log-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#web'] });
  token = await c.login('log-user', 'password1');
});
afterAll(() => c.close());

function mg(method: string, path: string, body?: unknown) {
  return c.call(method, `${MGMT}${path}`, { token: admin, body });
}
const created = () => heard.filter((e): e is Extract<ZtcEvent, { namespace: 'edge.sessions' }> => e.namespace === 'edge.sessions' && e.event_type === 'created');

describe('a session with no edge router', () => {
  it('is made and says what it lacks: a service edge router policy, then an edge router policy for the identity', async () => {
    expect((await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: 'log-svc' } })).status).toBe(201);
    expect(created().at(-1)).toMatchObject({
      granted_by: { service_policies: [{ name: 'log-dial' }], edge_router_policies: [], service_edge_router_policies: [], edge_routers: [] },
      missing: [{ code: 'NO_SERVICE_EDGE_ROUTER_POLICY', message: "no service edge router policy gives service 'log-svc' an edge router" }],
    });
    await mg('POST', '/service-edge-router-policies', { name: 'log-serp', semantic: 'AnyOf', serviceRoles: ['#web'], edgeRouterRoles: ['#public'] });
    expect((await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: 'log-svc' } })).status).toBe(201);
    expect(created().at(-1)).toMatchObject({ missing: [{ code: 'NO_COMMON_ROUTER' }] });
    await mg('POST', '/edge-router-policies', { name: 'log-erp', semantic: 'AnyOf', identityRoles: ['#staff'], edgeRouterRoles: ['#public'] });
    expect((await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: 'log-svc' } })).status).toBe(201);
    const last = created().at(-1)!;
    expect(last).toMatchObject({ granted_by: { edge_router_policies: [{ name: 'log-erp' }], service_edge_router_policies: [{ name: 'log-serp' }], edge_routers: [{ name: 'log-er' }] } });
    expect(last.missing).toBeUndefined();
  });
});
