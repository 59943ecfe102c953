// The config types every controller has from its first start. The schemas are written for ztc, but
// they accept and refuse exactly what upstream's 1.1.x controller does with its own (checked against
// its seeded schemas, validated there by gojsonschema): no unknown fields anywhere upstream closes an
// object, host terminators need protocol/address/port or the matching forward* flag with its allowed
// list, lists are non-empty sets. Quirks are kept on purpose, since tunnelers were written against
// them: the duration pattern is not anchored ("5s" anywhere in the text passes), addresses are only
// checked to be non-empty strings (upstream's idn-hostname format is not enforced by its validator),
// and ziti-tunneler-client.v1 takes an empty hostname.

const INT32_MAX = 2147483647;
const ref = (name: string) => ({ $ref: `#/definitions/${name}` });
/** A non-empty list of distinct items of one kind, as upstream's "inhabitedSet". */
const setOf = (item: string) => ({ allOf: [ref('nonEmptySet'), { items: ref(item) }] });

/** Health checks a hosting tunneler runs against its target (ziti-tunneler-server.v1 and host.v1/v2). */
const checkDefinitions = {
  duration: { type: 'string', pattern: '[0-9]+(h|m|s|ms)' },
  httpMethod: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH'] },
  checkAction: {
    type: 'object',
    additionalProperties: false,
    required: ['trigger', 'action'],
    properties: {
      trigger: { type: 'string', enum: ['fail', 'pass', 'change'] },
      consecutiveEvents: { type: 'integer', minimum: 0, maximum: 65535 },
      duration: ref('duration'),
      action: { type: 'string', pattern: '(mark (un)?healthy|increase cost [0-9]+|decrease cost [0-9]+|send event)' },
    },
  },
  checkActions: { type: 'array', minItems: 1, maxItems: 20, items: ref('checkAction') },
  portCheck: {
    type: 'object',
    additionalProperties: false,
    required: ['address', 'interval', 'timeout'],
    properties: { address: { type: 'string' }, interval: ref('duration'), timeout: ref('duration'), actions: ref('checkActions') },
  },
  httpCheck: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'interval', 'timeout'],
    properties: {
      url: { type: 'string' },
      method: ref('httpMethod'),
      body: { type: 'string' },
      expectStatus: { type: 'integer', minimum: 100, maximum: 599 },
      expectInBody: { type: 'string' },
      interval: ref('duration'),
      timeout: ref('duration'),
      actions: ref('checkActions'),
    },
  },
  portChecks: { type: 'array', items: ref('portCheck') },
  httpChecks: { type: 'array', items: ref('httpCheck') },
};
const checkProperties = { portChecks: ref('portChecks'), httpChecks: ref('httpChecks') };

/** What intercepting and hosting tunnelers share: addresses, ports, protocols. */
const tunnelDefinitions = {
  address: { type: 'string', not: { pattern: '^$' }, description: 'An IP address, CIDR, host name or wildcard name (*.example.com)' },
  nonEmptySet: { type: 'array', minItems: 1, uniqueItems: true },
  port: { type: 'integer', minimum: 0, maximum: 65535 },
  portRange: { type: 'object', additionalProperties: false, required: ['low', 'high'], properties: { low: ref('port'), high: ref('port') } },
  protocol: { type: 'string', enum: ['tcp', 'udp'] },
  seconds: { type: 'integer', minimum: 0, maximum: INT32_MAX },
  proxy: {
    type: 'object',
    required: ['type', 'address'],
    properties: { type: { type: 'string', enum: ['http'], description: 'The kind of proxy (only http)' }, address: { type: 'string', description: 'host:port of the proxy' } },
  },
};

/** Either dial a fixed value, or forward what the client intercepted (then the allowed list is required). */
const fixedOrForwarded = (forward: string, allowed: string, fixed: string) => ({
  if: { required: [forward], properties: { [forward]: { const: true } } },
  then: { required: [allowed] },
  else: { required: [fixed] },
});

/** One hosting terminator: host.v1 is one, host.v2 holds a list of them. */
const hostTerminator = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...checkProperties,
    protocol: { ...ref('protocol'), description: 'The protocol to dial' },
    forwardProtocol: { type: 'boolean', enum: [true], description: 'Dial the protocol the client intercepted (instead of protocol)' },
    allowedProtocols: { ...setOf('protocol'), description: 'The protocols forwardProtocol may dial' },
    address: { ...ref('address'), description: 'The address or host name to dial' },
    forwardAddress: { type: 'boolean', enum: [true], description: 'Dial the address the client intercepted (instead of address)' },
    allowedAddresses: { ...setOf('address'), description: 'The addresses forwardAddress may dial' },
    port: { ...ref('port'), description: 'The port to dial' },
    forwardPort: { type: 'boolean', enum: [true], description: 'Dial the port the client intercepted (instead of port)' },
    allowedPortRanges: { ...setOf('portRange'), description: 'The ports forwardPort may dial' },
    allowedSourceAddresses: { ...setOf('address'), description: 'Source addresses the hosting tunneler routes locally so binding succeeds' },
    listenOptions: {
      type: 'object',
      additionalProperties: false,
      properties: {
        bindUsingEdgeIdentity: { type: 'boolean', description: 'Bind with the hosting identity\'s name as the terminator identity' },
        connectTimeout: { ...ref('duration'), description: 'Outbound connect timeout (default 5s); wins over connectTimeoutSeconds' },
        connectTimeoutSeconds: { ...ref('seconds'), description: 'Deprecated: use connectTimeout' },
        cost: { type: 'integer', minimum: 0, maximum: 65535, description: 'Terminator cost (default 0)' },
        identity: { type: 'string', description: 'Terminator identity; $tunneler_id.name and $tunneler_id.tag[name] are resolved' },
        maxConnections: { type: 'integer', minimum: 1, description: 'Default 3' },
        precedence: { type: 'string', enum: ['default', 'required', 'failed'], description: 'Default: default' },
      },
    },
    proxy: { ...ref('proxy'), description: 'Send outgoing connections through this proxy' },
  },
  allOf: [
    fixedOrForwarded('forwardProtocol', 'allowedProtocols', 'protocol'),
    fixedOrForwarded('forwardAddress', 'allowedAddresses', 'address'),
    fixedOrForwarded('forwardPort', 'allowedPortRanges', 'port'),
  ],
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

// The $ids are upstream's: they name the schema, and tools comparing config types see the same one.
export const BUILTIN_CONFIG_TYPES: Record<string, Record<string, unknown>> = {
  'intercept.v1': {
    $id: 'http://edge.openziti.org/schemas/intercept.v1.config.json',
    type: 'object',
    additionalProperties: false,
    definitions: tunnelDefinitions,
    required: ['protocols', 'addresses', 'portRanges'],
    properties: {
      protocols: setOf('protocol'),
      addresses: setOf('address'),
      portRanges: setOf('portRange'),
      dialOptions: {
        type: 'object',
        additionalProperties: false,
        properties: {
          identity: { type: 'string', description: 'Dial the terminator of this identity; $dst_protocol, $dst_ip and $dst_port are resolved' },
          connectTimeoutSeconds: { ...ref('seconds'), description: 'Default 5 without dialOptions, 15 with them' },
        },
      },
      sourceIp: { type: 'string', description: 'Source IP[:port] the hosting tunneler spoofs; $tunneler_id.name, $tunneler_id.tag[name], $src_ip, $src_port and $dst_port are resolved' },
    },
  },
  'host.v1': {
    $id: 'http://ziti-edge.netfoundry.io/schemas/host.v1.schema.json',
    definitions: { ...checkDefinitions, ...tunnelDefinitions },
    ...hostTerminator,
  },
  'host.v2': {
    $id: 'http://ziti-edge.netfoundry.io/schemas/host.v2.schema.json',
    type: 'object',
    additionalProperties: false,
    definitions: { ...checkDefinitions, ...tunnelDefinitions, terminator: hostTerminator },
    required: ['terminators'],
    properties: { terminators: { type: 'array', minItems: 1, items: ref('terminator') } },
  },
  'ziti-tunneler-client.v1': {
    $id: 'http://edge.openziti.org/schemas/ziti-tunneler-client.v1.config.json',
    type: 'object',
    additionalProperties: false,
    required: ['hostname', 'port'],
    properties: { hostname: { type: 'string' }, port: { type: 'integer', minimum: 0, maximum: 65535 } },
  },
  'ziti-tunneler-server.v1': {
    $id: 'http://edge.openziti.org/schemas/ziti-tunneler-server.v1.config.json',
    type: 'object',
    additionalProperties: false,
    definitions: checkDefinitions,
    required: ['hostname', 'port'],
    properties: {
      ...checkProperties,
      protocol: { type: ['string', 'null'], enum: ['tcp', 'udp'] },
      hostname: { type: 'string' },
      port: { type: 'integer', minimum: 0, maximum: 65535 },
    },
  },
};

/**
 * Earlier ztc versions seeded cut-down schemas whose $id was the bare type name; a built-in type still
 * carrying one gets the schema above at start (an operator's own edit has another $id and is kept).
 */
export function isEarlySeed(name: string, schemaText: string): boolean {
  try {
    return (JSON.parse(schemaText) as { $id?: unknown }).$id === name;
  } catch {
    return false;
  }
}
