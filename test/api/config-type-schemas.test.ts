// The built-in config types accept and refuse what upstream's 1.1.10 controller does with its own
// schemas (each case below was read from upstream's seeded schemas and gojsonschema's behaviour):
// closed objects, host terminators that dial a fixed value or forward one with an allowed list,
// non-empty sets, proxies, health checks. Databases seeded with ztc's earlier cut-down schemas get the
// full ones at start, and the configs they already hold still load.
import { describe, expect, it } from 'vitest';
import { controllerForFile, expectError, MGMT, startTestController, tempDataDir } from '../helpers/controller.js';

const file = controllerForFile();

let n = 0;
const create = (type: string, data: unknown) => file.c.call('POST', `${MGMT}/configs`, { token: file.admin, body: { name: `cfg-${type}-${n++}`, configTypeId: type, data } });
async function accepts(type: string, data: unknown) {
  const r = await create(type, data);
  expect(r.status, `${type} ${JSON.stringify(data)}: ${r.text}`).toBe(201);
}
/** Refused as upstream refuses it: 400 COULD_NOT_VALIDATE, the cause naming the field and carrying a value. */
async function refuses(type: string, data: unknown, field?: string) {
  const r = await create(type, data);
  expect(r.status, `${type} ${JSON.stringify(data)}: ${r.text}`).toBe(400);
  const e = expectError(r, 400, 'COULD_NOT_VALIDATE');
  expect(typeof e.cause.value).toBe('string');
  if (field) expect(e.cause.field).toBe(field);
  return e;
}

const fixed = { protocol: 'tcp', address: 'localhost', port: 8080 };

describe('host.v1', () => {
  it('refuses a protocol alone (upstream\'s CLI: create config bad-host2 host.v1 \'{"protocol":"tcp"}\')', async () => {
    const e = await refuses('host.v1', { protocol: 'tcp' }, 'address');
    expect(e.cause.reason).toBe('is required');
    expect(e.cause.value).toBe('<nil>');
    await refuses('host.v1', { protocol: 'tcp', address: 'localhost' }, 'port');
    await refuses('host.v1', { address: 'localhost', port: 80 }, 'protocol');
  });

  it('accepts fixed values, and forwarding each with its allowed list', async () => {
    await accepts('host.v1', fixed);
    await accepts('host.v1', {
      forwardProtocol: true, allowedProtocols: ['tcp', 'udp'],
      forwardAddress: true, allowedAddresses: ['10.0.0.0/24', '*.example.com'],
      forwardPort: true, allowedPortRanges: [{ low: 80, high: 443 }],
      allowedSourceAddresses: ['192.168.1.0/24'],
    });
    // Forwarding one, fixing the others.
    await accepts('host.v1', { protocol: 'udp', forwardAddress: true, allowedAddresses: ['10.1.2.3'], port: 53 });
  });

  it('refuses forwarding without its allowed list, a false forward flag, and empty or repeated sets', async () => {
    await refuses('host.v1', { forwardProtocol: true, address: 'x', port: 1 }, 'allowedProtocols');
    await refuses('host.v1', { ...fixed, forwardPort: false }, 'forwardPort');
    await refuses('host.v1', { protocol: 'tcp', forwardAddress: true, allowedAddresses: [], port: 1 }, 'allowedAddresses');
    await refuses('host.v1', { protocol: 'tcp', forwardAddress: true, allowedAddresses: ['a', 'a'], port: 1 }, 'allowedAddresses');
    await refuses('host.v1', { ...fixed, address: '' }, 'address');
    await refuses('host.v1', { ...fixed, protocol: 'icmp' }, 'protocol');
    await refuses('host.v1', { ...fixed, port: 70000 }, 'port');
  });

  it('refuses unknown fields, at the top and in listenOptions', async () => {
    const e = await refuses('host.v1', { ...fixed, colour: 'blue' }, 'colour');
    expect(e.cause.value).toBe('blue');
    await refuses('host.v1', { ...fixed, listenOptions: { bindUsingEdgeIdentity: true, speed: 3 } }, 'listenOptions.speed');
    await accepts('host.v1', { ...fixed, listenOptions: { bindUsingEdgeIdentity: true, connectTimeout: '5s', connectTimeoutSeconds: 5, cost: 10, identity: '$tunneler_id.name', maxConnections: 3, precedence: 'required' } });
    await refuses('host.v1', { ...fixed, listenOptions: { precedence: 'sometimes' } }, 'listenOptions.precedence');
    await refuses('host.v1', { ...fixed, listenOptions: { maxConnections: 0 } }, 'listenOptions.maxConnections');
  });

  it('takes an http proxy with an address, as upstream', async () => {
    await accepts('host.v1', { ...fixed, proxy: { type: 'http', address: 'proxy.internal:3128' } });
    await refuses('host.v1', { ...fixed, proxy: { type: 'socks5', address: 'proxy.internal:1080' } }, 'proxy.type');
    await refuses('host.v1', { ...fixed, proxy: { type: 'http' } }, 'proxy.address');
  });

  it('checks health checks as upstream, unanchored duration pattern included', async () => {
    await accepts('host.v1', {
      ...fixed,
      portChecks: [{ address: 'localhost:8080', interval: '5s', timeout: '500ms', actions: [{ trigger: 'fail', consecutiveEvents: 3, action: 'mark unhealthy' }] }],
      httpChecks: [{ url: 'http://localhost:8080/health', method: 'GET', expectStatus: 200, expectInBody: 'ok', interval: '1m', timeout: '10s', actions: [{ trigger: 'pass', action: 'increase cost 10', duration: '1h' }] }],
    });
    // Upstream's pattern is not anchored: any text with a number and unit in it passes.
    await accepts('host.v1', { ...fixed, portChecks: [{ address: 'x:1', interval: 'every 5s', timeout: '1s' }] });
    await refuses('host.v1', { ...fixed, portChecks: [{ address: 'x:1', interval: 'often', timeout: '1s' }] }, 'portChecks.0.interval');
    await refuses('host.v1', { ...fixed, portChecks: [{ address: 'x:1', interval: '5s' }] }, 'portChecks.0.timeout');
    await refuses('host.v1', { ...fixed, httpChecks: [{ url: 'http://x', interval: '5s', timeout: '1s', expectStatus: 700 }] }, 'httpChecks.0.expectStatus');
    await refuses('host.v1', { ...fixed, httpChecks: [{ url: 'http://x', interval: '5s', timeout: '1s', method: 'DELETE' }] }, 'httpChecks.0.method');
    await refuses('host.v1', { ...fixed, portChecks: [{ address: 'x:1', interval: '5s', timeout: '1s', actions: [] }] }, 'portChecks.0.actions');
    await refuses('host.v1', { ...fixed, portChecks: [{ address: 'x:1', interval: '5s', timeout: '1s', actions: [{ trigger: 'fail', action: 'reboot' }] }] }, 'portChecks.0.actions.0.action');
  });
});

describe('host.v2', () => {
  it('holds a non-empty list of host.v1 terminators', async () => {
    await accepts('host.v2', { terminators: [fixed, { forwardProtocol: true, allowedProtocols: ['udp'], address: 'dns.internal', port: 53, listenOptions: { precedence: 'failed' } }] });
    await refuses('host.v2', { terminators: [] }, 'terminators');
    await refuses('host.v2', {}, 'terminators');
    await refuses('host.v2', { terminators: [{ protocol: 'tcp' }] }, 'terminators.0.address');
    await refuses('host.v2', { terminators: [{ ...fixed, extra: 1 }] }, 'terminators.0.extra');
    await refuses('host.v2', { terminators: [fixed], protocol: 'tcp' }, 'protocol');
  });
});

describe('intercept.v1', () => {
  const good = { protocols: ['tcp', 'udp'], addresses: ['10.0.0.0/8', '*.example.com', 'web.ziti'], portRanges: [{ low: 80, high: 443 }] };
  it('accepts upstream\'s fields', async () => {
    await accepts('intercept.v1', good);
    await accepts('intercept.v1', { ...good, dialOptions: { identity: '$dst_ip', connectTimeoutSeconds: 10 }, sourceIp: '$src_ip:$src_port' });
  });
  it('refuses unknown fields, repeated or empty sets, and empty addresses', async () => {
    await refuses('intercept.v1', { ...good, hostname: 'x' }, 'hostname');
    await refuses('intercept.v1', { ...good, dialOptions: { identity: 'x', retries: 2 } }, 'dialOptions.retries');
    await refuses('intercept.v1', { ...good, portRanges: [{ low: 1, high: 2, step: 1 }] }, 'portRanges.0.step');
    await refuses('intercept.v1', { ...good, protocols: ['tcp', 'tcp'] }, 'protocols');
    await refuses('intercept.v1', { ...good, addresses: [] }, 'addresses');
    await refuses('intercept.v1', { ...good, addresses: [''] }, 'addresses.0');
    await refuses('intercept.v1', { ...good, dialOptions: { connectTimeoutSeconds: -1 } }, 'dialOptions.connectTimeoutSeconds');
    await refuses('intercept.v1', { protocols: ['tcp'], addresses: ['x'] }, 'portRanges');
  });
});

describe('ziti-tunneler-client.v1 and ziti-tunneler-server.v1', () => {
  it('client: hostname and port only (an empty hostname passes, as upstream)', async () => {
    await accepts('ziti-tunneler-client.v1', { hostname: 'web.ziti', port: 80 });
    await accepts('ziti-tunneler-client.v1', { hostname: '', port: 0 });
    await refuses('ziti-tunneler-client.v1', { hostname: 'web.ziti', port: 80, protocol: 'tcp' }, 'protocol');
    await refuses('ziti-tunneler-client.v1', { hostname: 'web.ziti' }, 'port');
    await refuses('ziti-tunneler-client.v1', { hostname: 'web.ziti', port: 65536 }, 'port');
  });
  it('server: protocol, hostname, port and health checks', async () => {
    await accepts('ziti-tunneler-server.v1', { hostname: 'localhost', port: 8080, protocol: 'udp', portChecks: [{ address: 'localhost:8080', interval: '5s', timeout: '1s' }] });
    await accepts('ziti-tunneler-server.v1', { hostname: 'localhost', port: 8080 });
    // Upstream's type allows null, its enum does not: null is refused.
    await refuses('ziti-tunneler-server.v1', { hostname: 'localhost', port: 8080, protocol: null }, 'protocol');
    await refuses('ziti-tunneler-server.v1', { hostname: 'localhost', port: 8080, address: 'x' }, 'address');
    await refuses('ziti-tunneler-server.v1', { hostname: 'localhost', port: 8080, httpChecks: [{ url: 'http://x', interval: '5s', timeout: '1s', extra: 1 }] }, 'httpChecks.0.extra');
  });
});

describe('config updates', () => {
  it('validate replace and patch against the same rules', async () => {
    const made = await create('host.v1', fixed);
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id;
    expectError(await file.c.call('PATCH', `${MGMT}/configs/${id}`, { token: file.admin, body: { data: { protocol: 'tcp' } } }), 400, 'COULD_NOT_VALIDATE');
    expectError(await file.c.call('PUT', `${MGMT}/configs/${id}`, { token: file.admin, body: { name: 'x-host', data: { ...fixed, unknown: true } } }), 400, 'COULD_NOT_VALIDATE');
    expect((await file.c.call('PATCH', `${MGMT}/configs/${id}`, { token: file.admin, body: { data: { ...fixed, port: 9090 } } })).status).toBe(200);
  });
});

describe('a database seeded with the earlier cut-down schemas', () => {
  it('gets the full schemas at start; its configs still load; a type the operator edited is kept', async () => {
    const dataDir = tempDataDir();
    const first = await startTestController({ dataDir });
    const db = first.opened.ctx.store.db;
    // As earlier versions seeded host.v1: bare $id, no closed objects, no if/then/else.
    const early = { $id: 'host.v1', type: 'object', properties: { protocol: { type: 'string', enum: ['tcp', 'udp'] }, address: { type: 'string' }, port: { type: 'integer' } } };
    const mine = { $id: 'my-own-intercept', type: 'object', properties: { addresses: { type: 'array' } } };
    await db.updateTable('configTypes').set({ schema: JSON.stringify(early) }).where('id', '=', 'NH5p4FpGR').execute();
    await db.updateTable('configTypes').set({ schema: JSON.stringify(mine) }).where('id', '=', 'g7cIWbcGg').execute();
    const t1 = await first.login();
    const old = await first.call('POST', `${MGMT}/configs`, { token: t1, body: { name: 'old-host', configTypeId: 'host.v1', data: { protocol: 'tcp', colour: 'blue' } } });
    expect(old.status, old.text).toBe(201);
    await first.app.close();
    await first.opened.close();

    const second = await startTestController({ dataDir, config: { db: first.config.db } });
    try {
      const t2 = await second.login();
      const get = async (path: string) => second.call('GET', `${MGMT}${path}`, { token: t2 });
      const host = (await get('/config-types/NH5p4FpGR')).body.data;
      expect(host.schema.additionalProperties).toBe(false);
      expect(host.schema.properties.proxy).toBeDefined();
      expect((await get('/config-types/g7cIWbcGg')).body.data.schema).toEqual(mine);
      const cfg = await get(`/configs/${old.body.data.id}`);
      expect(cfg.status).toBe(200);
      expect(cfg.body.data.data).toEqual({ protocol: 'tcp', colour: 'blue' });
      expect((await get('/configs?filter=name%3D%22old-host%22')).body.data).toHaveLength(1);
      // Writing it now validates against the full schema.
      expectError(await second.call('PATCH', `${MGMT}/configs/${old.body.data.id}`, { token: t2, body: { data: { protocol: 'tcp', colour: 'blue' } } }), 400, 'COULD_NOT_VALIDATE');
    } finally {
      await second.close();
    }
  });
});
