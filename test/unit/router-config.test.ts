// The placement of a router whose config ztc writes (src/cli/commands/router-config.ts): the control
// channel's address the controller names, and ports no other router of the network advertises on the
// same machine (the embedded router of `ztc serve` has 3022 on the controller's host).
import { describe, expect, it } from 'vitest';
import { routerPlacement, routerConfigYaml } from '../../src/cli/commands/router-config.js';
import type { Reply, Transport } from '../../src/cli/transport.js';
import YAML from 'yaml';

function transport(answers: Record<string, unknown[] | undefined>): Transport {
  const reply = (data: unknown[] | undefined): Reply => (data ? { status: 200, headers: {}, text: '', json: { data } } : { status: 404, headers: {}, text: '', json: { error: { code: 'NOT_FOUND', message: 'no' } } });
  return {
    describe: 'https://localhost:1280',
    request: async (_m: string, p: string) => reply(answers[p.split('?')[0]]),
    download: async () => reply(undefined),
    close: async () => {},
  };
}

const network = transport({
  '/edge/management/v1/controllers': [{ ctrlAddress: 'tls:vm:6262', isOnline: true, apiAddresses: { 'edge-management': [{ url: 'https://vm:1280/edge/management/v1' }] } }],
  '/edge/management/v1/edge-routers': [{ supportedProtocols: { tls: 'tls://vm:3022' } }, { supportedProtocols: { tls: 'tls://localhost:3023' } }, { supportedProtocols: { tls: 'tls://elsewhere.example:3024' } }],
  '/fabric/v1/routers': [{ listenerAddresses: [{ address: 'tls:127.0.0.1:10080' }] }],
});

describe("a router's placement", () => {
  it('takes the control channel the controller names, and the first ports no router has on this machine', async () => {
    const w = await routerPlacement(network, { tunnelerMode: 'none' }, 'localhost');
    expect(w).toMatchObject({ ctrlEndpoint: 'tls:vm:6262', host: 'vm', edgePort: 3024, linkPort: 10081 });
    expect(w.guessed).toBeUndefined();
  });

  it('on another host, upstream\'s default ports; what is given, as given', async () => {
    expect(await routerPlacement(network, { routerHost: 'er2.example.com' }, 'localhost')).toMatchObject({ host: 'er2.example.com', edgePort: 3022, linkPort: 10080 });
    expect(await routerPlacement(network, { edgePort: '3022', linkPort: '0', ctrlEndpoint: 'tls:ctrl.example.com:443' }, 'localhost')).toMatchObject({ ctrlEndpoint: 'tls:ctrl.example.com:443', edgePort: 3022, linkPort: 0 });
    await expect(routerPlacement(network, { edgePort: 'x' }, 'localhost')).rejects.toThrow(/--edge-port takes a port number/);
    await expect(routerPlacement(network, { ctrlEndpoint: 'vm:6262' }, 'localhost')).rejects.toThrow(/--ctrl-endpoint takes tls:HOST:PORT/);
  });

  it('says when the controller did not name its control channel (local mode, --no-ctrl)', async () => {
    const silent = transport({ '/edge/management/v1/controllers': [{ ctrlAddress: null }], '/edge/management/v1/edge-routers': [] });
    const w = await routerPlacement(silent, {}, 'ctrl.example.com');
    expect(w.ctrlEndpoint).toBe('tls:ctrl.example.com:6262');
    expect(w.guessed).toMatch(/did not say where its control channel listens/);
  });

  it('lists every control channel given (several controllers on one database) as ctrl.endpoints', async () => {
    const w = await routerPlacement(network, { ctrlEndpoint: ['tls:ctrl1.example.com:6262', 'tls:ctrl2.example.com:6262'] }, 'localhost');
    expect(w).toMatchObject({ ctrlEndpoint: 'tls:ctrl1.example.com:6262', ctrlEndpoints: ['tls:ctrl1.example.com:6262', 'tls:ctrl2.example.com:6262'], host: 'ctrl1.example.com' });
    const y = YAML.parse(routerConfigYaml('er-7', '/tmp/er-7.yml', w, 'none'));
    expect(y.ctrl).toEqual({ endpoints: ['tls:ctrl1.example.com:6262', 'tls:ctrl2.example.com:6262'], endpointsFile: '/tmp/er-7.endpoints.yml' });
    // Not given: every controller online that says where it listens (several on one database).
    const two = transport({
      '/edge/management/v1/controllers': [{ ctrlAddress: 'tls:ctrl1.example.com:6262', isOnline: true }, { ctrlAddress: 'tls:ctrl2.example.com:6262', isOnline: true }, { ctrlAddress: 'tls:gone.example.com:6262', isOnline: false }],
      '/edge/management/v1/edge-routers': [],
    });
    expect(await routerPlacement(two, {}, 'localhost')).toMatchObject({ ctrlEndpoint: 'tls:ctrl1.example.com:6262', ctrlEndpoints: ['tls:ctrl1.example.com:6262', 'tls:ctrl2.example.com:6262'] });
    // One, as before: ctrl.endpoint.
    expect(YAML.parse(routerConfigYaml('er-8', '/tmp/er-8.yml', await routerPlacement(network, { ctrlEndpoint: ['tls:ctrl1.example.com:6262'] }, 'localhost'), 'none')).ctrl.endpoint).toBe('tls:ctrl1.example.com:6262');
    await expect(routerPlacement(network, { ctrlEndpoint: ['tls:ctrl1.example.com:6262', 'ctrl2:6262'] }, 'localhost')).rejects.toThrow(/not 'ctrl2:6262'/);
  });

  it('writes YAML that names an IP router host among the IP SANs, and an IPv6 one in brackets', () => {
    const y = YAML.parse(routerConfigYaml('er-6', '/tmp/er-6.yml', { ctrlEndpoint: 'tls:[::1]:6262', host: 'fd00::5', bind: '::', edgePort: 3022, linkPort: 10080 }, 'none'));
    expect(y.listeners[0].options.advertise).toBe('[fd00::5]:3022');
    expect(y.listeners[0].address).toBe('tls:[::]:3022');
    expect(y.link.listeners[0].advertise).toBe('tls:[fd00::5]:10080');
    expect(y.edge.csr.sans).toEqual({ dns: ['localhost'], ip: ['127.0.0.1', '::1', 'fd00::5'] });
    expect(y.identity.key).toBe('/tmp/er-6.key');
  });

  it('binds the listeners on every interface unless --router-bind names an address', async () => {
    const every = YAML.parse(routerConfigYaml('er-4', '/tmp/er-4.yml', await routerPlacement(network, {}, 'localhost'), 'none'));
    expect(every.listeners[0].address).toBe('tls:0.0.0.0:3024');
    expect(every.link.listeners[0].bind).toBe('tls:0.0.0.0:10081');
    const here = YAML.parse(routerConfigYaml('er-5', '/tmp/er-5.yml', await routerPlacement(network, { routerBind: '127.0.0.1' }, 'localhost'), 'none'));
    expect(here.listeners[0].address).toBe('tls:127.0.0.1:3024');
    expect(here.link.listeners[0].bind).toBe('tls:127.0.0.1:10081');
    expect(here.link.listeners[0].advertise).toBe('tls:vm:10081');
    await expect(routerPlacement(network, { routerBind: 'localhost' }, 'localhost')).rejects.toThrow(/--router-bind takes an IP address/);
  });
});
