// Config types (JSON schemas, built-ins from the first start) and configs validated against them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const post = (path: string, body: unknown) => c.call('POST', `${MGMT}${path}`, { token: admin, body });

describe('config types', () => {
  it('exist from the first start for the upstream built-ins', async () => {
    const names = (await c.call('GET', `${MGMT}/config-types?limit=100`, { token: admin })).body.data.map((t: { name: string }) => t.name);
    expect(names).toEqual(expect.arrayContaining(['intercept.v1', 'host.v1', 'host.v2', 'ziti-tunneler-client.v1', 'ziti-tunneler-server.v1']));
    const intercept = (await c.call('GET', `${MGMT}/config-types/g7cIWbcGg`, { token: admin })).body.data;
    expect(intercept.schema.required).toEqual(['protocols', 'addresses', 'portRanges']);
  });

  it('refuses a schema that is not a JSON schema, and a type in use cannot be deleted', async () => {
    expectError(await post('/config-types', { name: 'broken', schema: { type: 'no-such-type' } }), 400, 'COULD_NOT_VALIDATE');
    const t = await post('/config-types', { name: 'my.v1', schema: { type: 'object', required: ['size'], properties: { size: { type: 'integer', minimum: 1 } } } });
    expect(t.status, t.text).toBe(201);
    const cfg = await post('/configs', { name: 'small', configTypeId: 'my.v1', data: { size: 2 } });
    expect(cfg.status, cfg.text).toBe(201);
    expectError(await c.call('DELETE', `${MGMT}/config-types/${t.body.data.id}`, { token: admin }), 409, 'CAN_NOT_DELETE_REFERENCED_ENTITY');
    // A schema change that would reject existing configs is refused too.
    // 400, the status the document declares (upstream accepts it and leaves such configs unchecked).
    const refused = expectError(await c.call('PATCH', `${MGMT}/config-types/${t.body.data.id}`, { token: admin, body: { schema: { type: 'object', required: ['colour'] } } }), 400, 'COULD_NOT_VALIDATE');
    expect(refused.cause.field).toBe('schema');
    const list = await c.call('GET', `${MGMT}/config-types/${t.body.data.id}/configs`, { token: admin });
    expect(list.body.data.map((x: { name: string }) => x.name)).toEqual(['small']);
    expectError(await c.call('GET', `${MGMT}/config-types/nope/configs`, { token: admin }), 404);
    expect((await c.call('DELETE', `${MGMT}/configs/${cfg.body.data.id}`, { token: admin })).status).toBe(200);
    expect((await c.call('DELETE', `${MGMT}/config-types/${t.body.data.id}`, { token: admin })).status).toBe(200);
  });
});

describe('configs', () => {
  it('validates data against the type on create, replace and patch', async () => {
    const good = { protocols: ['tcp'], addresses: ['web.internal'], portRanges: [{ low: 443, high: 443 }] };
    const made = await post('/configs', { name: 'web-intercept', configTypeId: 'intercept.v1', data: good, tags: { team: 'web' } });
    expect(made.status, made.text).toBe(201);
    const d = (await c.call('GET', `${MGMT}/configs/${made.body.data.id}`, { token: admin })).body.data;
    expect(d).toMatchObject({ name: 'web-intercept', configTypeId: 'g7cIWbcGg', configType: { id: 'g7cIWbcGg', name: 'intercept.v1' }, data: good, tags: { team: 'web' } });
    const bad = expectError(await post('/configs', { name: 'bad', configTypeId: 'intercept.v1', data: { protocols: ['icmp'], addresses: ['x'], portRanges: [] } }), 400, 'COULD_NOT_VALIDATE');
    // Named inside the data, as upstream names it: `protocols.0`, never `data.protocols.0`.
    expect(bad.cause.field).toMatch(/^protocols/);
    const missing = expectError(await post('/configs', { name: 'missing', configTypeId: 'intercept.v1', data: { protocols: ['tcp'] } }), 400, 'COULD_NOT_VALIDATE');
    expect(missing.message).toMatch(/addresses|portRanges/);
    expect(missing.cause.field).toMatch(/^(addresses|portRanges)$/);
    const port = expectError(await post('/configs', { name: 'bad-port', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'x', port: 70000 } }), 400, 'COULD_NOT_VALIDATE');
    expect(port.cause.field).toBe('port');
    expectError(await post('/configs', { name: 'no-type', configTypeId: 'nope.v1', data: {} }), 400, 'COULD_NOT_VALIDATE');
    expectError(await c.call('PATCH', `${MGMT}/configs/${made.body.data.id}`, { token: admin, body: { data: { ...good, portRanges: [{ low: 70000, high: 1 }] } } }), 400, 'COULD_NOT_VALIDATE');
    expect((await c.call('PATCH', `${MGMT}/configs/${made.body.data.id}`, { token: admin, body: { data: { ...good, addresses: ['*.internal'] } } })).status).toBe(200);
    expect((await c.call('PUT', `${MGMT}/configs/${made.body.data.id}`, { token: admin, body: { name: 'web-intercept-2', data: good } })).status).toBe(200);
    const after = (await c.call('GET', `${MGMT}/configs?filter=${encodeURIComponent('type = "g7cIWbcGg" and tags.team = null')}`, { token: admin })).body.data;
    expect(after.map((x: { name: string }) => x.name)).toEqual(['web-intercept-2']);
    expectError(await post('/configs', { name: 'web-intercept-2', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'localhost', port: 80 } }), 400, 'COULD_NOT_VALIDATE');
  });
});
