// The config types every controller has from its first start, with JSON schemas written for ztc from
// the documented shape of each type. Unknown extra fields are allowed, so configs written for newer
// tunnelers still store; the fields we know are type-checked.

const port = { type: 'integer', minimum: 0, maximum: 65535 };
const portRange = { type: 'object', required: ['low', 'high'], properties: { low: port, high: port } };
const protocol = { type: 'string', enum: ['tcp', 'udp'] };
const address = { type: 'string', minLength: 1 };
const duration = { type: 'string', pattern: '^[0-9]+(ms|s|m|h)$' };
const listenOptions = {
  type: 'object',
  properties: {
    bindUsingEdgeIdentity: { type: 'boolean' },
    connectTimeout: duration,
    connectTimeoutSeconds: { type: 'integer', minimum: 0 },
    cost: port,
    identity: { type: 'string' },
    maxConnections: { type: 'integer', minimum: 1 },
    precedence: { type: 'string', enum: ['default', 'required', 'failed'] },
  },
};
const hostTerminator = {
  type: 'object',
  properties: {
    protocol, forwardProtocol: { type: 'boolean' }, allowedProtocols: { type: 'array', items: protocol, minItems: 1 },
    address, forwardAddress: { type: 'boolean' }, allowedAddresses: { type: 'array', items: address, minItems: 1 },
    port, forwardPort: { type: 'boolean' }, allowedPortRanges: { type: 'array', items: portRange, minItems: 1 },
    allowedSourceAddresses: { type: 'array', items: address },
    listenOptions,
    portChecks: { type: 'array', items: { type: 'object', required: ['address', 'interval', 'timeout'], properties: { address, interval: duration, timeout: duration } } },
    httpChecks: { type: 'array', items: { type: 'object', required: ['url', 'interval', 'timeout'], properties: { url: { type: 'string' }, method: { type: 'string' }, expectStatus: { type: 'integer' }, interval: duration, timeout: duration } } },
  },
};

/**
 * The ids upstream gives its built-in config types (fixed in its first database migration). Clients
 * hard-code them: ZAC's simple-service form posts configs with configTypeId "g7cIWbcGg" (intercept.v1)
 * and "NH5p4FpGR" (host.v1), and tunnelers list the same ids, so ours are the same.
 */
export const BUILTIN_CONFIG_TYPE_IDS: Record<string, string> = {
  'intercept.v1': 'g7cIWbcGg',
  'host.v1': 'NH5p4FpGR',
  'host.v2': 'host.v2',
  'ziti-tunneler-client.v1': 'f2dd2df0-9c04-4b84-a91e-71437ac229f1',
  'ziti-tunneler-server.v1': 'cea49285-6c07-42cf-9f52-09a9b115c783',
};

export const BUILTIN_CONFIG_TYPES: Record<string, Record<string, unknown>> = {
  'intercept.v1': {
    $id: 'intercept.v1', type: 'object', required: ['protocols', 'addresses', 'portRanges'],
    properties: {
      protocols: { type: 'array', items: protocol, minItems: 1 },
      addresses: { type: 'array', items: address, minItems: 1 },
      portRanges: { type: 'array', items: portRange, minItems: 1 },
      dialOptions: { type: 'object', properties: { identity: { type: 'string' }, connectTimeoutSeconds: { type: 'integer', minimum: 0 } } },
      sourceIp: { type: 'string' },
    },
  },
  'host.v1': { $id: 'host.v1', ...hostTerminator },
  'host.v2': { $id: 'host.v2', type: 'object', required: ['terminators'], properties: { terminators: { type: 'array', items: hostTerminator, minItems: 1 } } },
  'ziti-tunneler-client.v1': { $id: 'ziti-tunneler-client.v1', type: 'object', required: ['hostname', 'port'], properties: { hostname: address, port } },
  'ziti-tunneler-server.v1': { $id: 'ziti-tunneler-server.v1', type: 'object', required: ['hostname', 'port'], properties: { hostname: address, port, protocol } },
};
