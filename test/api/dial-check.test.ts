// The one statement a Dial or Bind's checks read (model/dial-check.ts) against the policy reads it
// replaced (policy/access.ts grantsFor and sharedEdgeRouters), for routers each policy kind admits or not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionForDial } from '../../src/model/dial-check.js';
import { grantsFor, sharedEdgeRouters } from '../../src/model/policy/access.js';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
const made = async (path: string, body: unknown) => {
  const r = await c.call('POST', `${MGMT}${path}`, { token: admin, body });
  if (r.status !== 201) throw new Error(`${path}: ${r.text}`);
  return r.body.data.id as string;
};

beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c?.close());

describe('a dial or bind check in one statement', () => {
  it('finds the session and says what the grants and the router policies say, as the separate reads do', async () => {
    const service = await made('/services', { name: 'dc-svc', encryptionRequired: true, roleAttributes: ['dc-s'] });
    const identityId = await c.user('dc-client');
    expect((await c.call('PATCH', `${MGMT}/identities/${identityId}`, { token: admin, body: { roleAttributes: ['dc-c'] } })).status).toBe(200);
    const both = await made('/edge-routers', { name: 'dc-both', roleAttributes: ['dc-both'] });
    const identityOnly = await made('/edge-routers', { name: 'dc-identity-only', roleAttributes: ['dc-id'] });
    const serviceOnly = await made('/edge-routers', { name: 'dc-service-only', roleAttributes: ['dc-sv'] });
    const neither = await made('/edge-routers', { name: 'dc-neither' });
    await made('/service-policies', { name: 'dc-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#dc-c'], serviceRoles: ['#dc-s'] });
    await made('/edge-router-policies', { name: 'dc-erp', semantic: 'AnyOf', identityRoles: ['#dc-c'], edgeRouterRoles: ['#dc-both', '#dc-id'] });
    await made('/service-edge-router-policies', { name: 'dc-serp', semantic: 'AnyOf', serviceRoles: ['#dc-s'], edgeRouterRoles: ['#dc-both', '#dc-sv'] });

    const token = await c.login('dc-client', 'password1');
    const s = await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: service, type: 'Dial' } });
    expect(s.status).toBe(201);
    const ctx = c.opened.ctx;
    const db = ctx.store.db;

    const dial = await sessionForDial(ctx, s.body.data.token, 'dial', both);
    expect(dial).toMatchObject({ grant: true, router: true, session: { id: s.body.data.id, identityId, serviceId: service, serviceName: 'dc-svc', identityName: 'dc-client', type: 'Dial', jwt: false } });
    const grants = await grantsFor(db, identityId, [service]);
    for (const kind of ['dial', 'bind'] as const) {
      expect((await sessionForDial(ctx, s.body.data.token, kind, both))!.grant).toBe(grants.some((g) => g.kind === kind));
    }
    for (const [router, allowed] of [[both, true], [identityOnly, false], [serviceOnly, false], [neither, false]] as const) {
      const separate = !!(await sharedEdgeRouters(db, identityId, service).where('t.entityId', '=', router).executeTakeFirst());
      expect(separate).toBe(allowed);
      expect((await sessionForDial(ctx, s.body.data.token, 'dial', router))!.router).toBe(allowed);
    }
    expect(await sessionForDial(ctx, 'not-a-session-token', 'dial', both)).toBeNull();
  });
});
