// Upstream 2.x's permission system, enforced: an identity that is no admin may still manage one kind of
// entity (`service`: every operation on services) or do one action on it (`identity.read`), on the
// Management API; everything else stays refused. Through HTTP, with real logins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MGMT, expectError, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
let serviceManager: string;
let identityReader: string;

beforeAll(async () => {
  c = await startTestController({ config: { authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 } });
  admin = await c.login();
  const sm = await c.user('service-manager');
  expect((await c.call('PATCH', `${MGMT}/identities/${sm}`, { token: admin, body: { permissions: ['service'] } })).status).toBe(200);
  serviceManager = await c.login('service-manager', 'password1');
  const ir = await c.user('identity-reader');
  expect((await c.call('PATCH', `${MGMT}/identities/${ir}`, { token: admin, body: { permissions: ['identity.read', 'ops.read'] } })).status).toBe(200);
  identityReader = await c.login('identity-reader', 'password1');
});
afterAll(() => c.close());

describe('permissions', () => {
  it("'service' lets an identity that is no admin create, read, update and delete services, and nothing else", async () => {
    const made = await c.call('POST', `${MGMT}/services`, { token: serviceManager, body: { name: 'by-permission', encryptionRequired: true } });
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id;
    expect((await c.call('GET', `${MGMT}/services/${id}`, { token: serviceManager })).status).toBe(200);
    expect((await c.call('PATCH', `${MGMT}/services/${id}`, { token: serviceManager, body: { roleAttributes: ['x'] } })).status).toBe(200);
    expect((await c.call('GET', `${MGMT}/services/${id}/service-policies`, { token: serviceManager })).status).toBe(200);
    // Other kinds: refused, saying what it holds.
    const e = expectError(await c.call('GET', `${MGMT}/identities`, { token: serviceManager }), 403);
    expect(e.message).toMatch(/holds service/);
    expectError(await c.call('POST', `${MGMT}/service-policies`, { token: serviceManager, body: { name: 'nope', type: 'Dial', semantic: 'AnyOf' } }), 403);
    expect((await c.call('DELETE', `${MGMT}/services/${id}`, { token: serviceManager })).status).toBe(200);
  });

  it("'identity.read' reads identities and nothing more; 'ops.read' reads the operational endpoints", async () => {
    expect((await c.call('GET', `${MGMT}/identities`, { token: identityReader })).status).toBe(200);
    expectError(await c.call('POST', `${MGMT}/identities`, { token: identityReader, body: { name: 'x', type: 'Default', isAdmin: false } }), 403);
    const list = (await c.call('GET', `${MGMT}/identities`, { token: admin })).body.data as { id: string; name: string }[];
    const someone = list.find((i) => i.name === 'service-manager')!;
    // An action on an identity (disable) is an update of it.
    expectError(await c.call('POST', `${MGMT}/identities/${someone.id}/disable`, { token: identityReader, body: { durationMinutes: 1 } }), 403);
    expectError(await c.call('GET', `${MGMT}/services`, { token: identityReader }), 403);
    expect((await c.call('GET', `${MGMT}/summary`, { token: identityReader })).status).toBe(200);
  });

  it('names upstream defines are accepted, others refused; an identity without any is refused with 401 as before', async () => {
    const id = await c.user('plain-user');
    expect((await c.call('PATCH', `${MGMT}/identities/${id}`, { token: admin, body: { permissions: ['config-type.create', 'ops', 'external-jwt-signer'] } })).status).toBe(200);
    expectError(await c.call('PATCH', `${MGMT}/identities/${id}`, { token: admin, body: { permissions: ['services'] } }), 400);
    expect((await c.call('PATCH', `${MGMT}/identities/${id}`, { token: admin, body: { permissions: [] } })).status).toBe(200);
    const plain = await c.login('plain-user', 'password1');
    expectError(await c.call('GET', `${MGMT}/services`, { token: plain }), 401);
  });
});
