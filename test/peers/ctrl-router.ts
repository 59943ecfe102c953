// A test peer for an upstream OpenZiti 1.1 router's side of the control channel, written from
// ../shared/reference/ctrl-channel-1.1.md: enrollment (erott, two CSRs), the hello with its version,
// link listeners and metadata headers, and the typed header values (string slices, uint32->bytes maps).
/* eslint-disable @typescript-eslint/no-explicit-any */
// Bodies use the protobuf codec of src/fabric (its own tests check it against hand-made bytes).
import { createHash, X509Certificate } from 'node:crypto';
import { encode, type Schema } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { newKeyAndCsr } from '../../src/model/pki/csr.js';
import { EdgePeer, le32, type Frame } from './edge-sdk.js';

export const T = {
  Hello: 0, Result: 2, Heartbeat: 5, Fault: 1004, Route: 1005, Unroute: 1006, RouteResult: 1022, CircuitConfirmation: 1034, RouterLinks: 1035, VerifyRouter: 1036,
  RemoveTerminators: 1038, PeerStateChanges: 1050, ServerHello: 20000, ClientHello: 20001, Error: 20002, SessionRemoved: 20102, ApiSessionAdded: 20200,
  ApiSessionRemoved: 20202, CreateTerminatorV2: 20216, CreateTerminatorV2Response: 20217, CreateCircuitV2: 20218, CreateCircuitV2Response: 20219,
  CreateCircuitV3: 20222, CreateCircuitV3Response: 20223,
  EnrollmentCertsResponse: 20301, EnrollmentExtendRouterRequest: 20302, EnrollmentExtendRouterVerifyRequest: 20303,
};
export const UPSTREAM_VERSION = 'v1.1.10|a11e8b4b|2024-09-04|linux|amd64';

export const i32 = (n: number) => Buffer.from(new Int32Array([n]).buffer);
export const strings = (list: string[]) => Buffer.concat([le32(list.length), ...list.flatMap((s) => [le32(Buffer.byteLength(s)), Buffer.from(s)])]);
export const bytesMap = (m: [number, Buffer][]) => Buffer.concat([le32(m.length), ...m.flatMap(([k, v]) => [le32(k), le32(v.length), v])]);
export function readBytesMap(b: Buffer): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  let at = 4;
  for (let i = 0; i < b.readUInt32LE(0); i++) {
    const k = b.readUInt32LE(at);
    const n = b.readUInt32LE(at + 4);
    out.set(k, b.subarray(at + 8, at + 8 + n));
    at += 8 + n;
  }
  return out;
}
export const fp = (pem: string) => createHash('sha1').update(new X509Certificate(pem).raw).digest('hex');

export interface EnrolledRouter {
  id: string;
  name: string;
  cert: string;
  key: string;
  /** Its server certificate (chain) and key, for the listeners it serves (links). */
  serverCert?: string;
  serverKey?: string;
}

/** What enrolling needs of the test network (test/helpers/network.ts): its management calls and raw calls. */
interface Api {
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  c: { call(method: string, path: string, o: { body: unknown }): Promise<{ status: number; text: string; body: any }> };
}

/** An edge router created through the API and enrolled as `ziti router enroll` does it. */
export async function enrollRouter(n: Api, name: string, roleAttributes = ['public']): Promise<EnrolledRouter> {
  const made = await n.api('POST', '/edge-routers', { name, roleAttributes });
  const id = made.body.data.id;
  const token = (await n.api('GET', `/edge-routers/${id}`)).body.data.enrollmentToken;
  const clientCsr = newKeyAndCsr(id);
  const serverCsr = newKeyAndCsr(id, ['localhost', '127.0.0.1']);
  const enrolled = await n.c.call('POST', `/edge/client/v1/enroll/erott?token=${token}`, { body: { certCsr: clientCsr.csrPem, serverCertCsr: serverCsr.csrPem } });
  if (enrolled.status !== 200) throw new Error(`enrolling router ${name}: ${enrolled.status} ${enrolled.text}`);
  return { id, name, cert: enrolled.body.data.cert, key: clientCsr.keyPem, serverCert: enrolled.body.data.serverCert, serverKey: serverCsr.keyPem };
}

export interface HelloOptions {
  cert?: string;
  key?: string;
  id?: string;
  /** Link listeners (hello header 10) and whether to announce link management (header 11). */
  listeners?: { address: string; protocol: string; groups?: string[] }[];
  managesLinks?: boolean;
  /** How long to wait for the hello's Result (10 s by default: a refusal closes the connection, which ends the wait at once). */
  resultMs?: number;
}

/** A router's side: TLS with its enrolled certificate and ALPN ziti-ctrl, then its hello (sequence -1). */
export async function connectRouter(port: number, r: EnrolledRouter, o: HelloOptions = {}): Promise<{ p: EdgePeer; result?: Frame }> {
  const p = await EdgePeer.connect(port, { cert: o.cert ?? r.cert, key: o.key ?? r.key, alpn: ['ziti-ctrl'] });
  const headers: [number, Buffer][] = [[4, Buffer.from(UPSTREAM_VERSION)]];
  if (o.listeners) headers.push([10, encode(Schemas.Listeners, { listeners: o.listeners })]);
  // RouterMetadata{capabilities:[LinkManagement]}, packed as proto3 writes repeated enums.
  if (o.managesLinks) headers.push([11, Buffer.from([0x0a, 0x01, 0x01])]);
  p.send(T.Hello, headers, Buffer.from(o.id ?? r.id), -1);
  const result = await p.next((f) => f.type === T.Result, o.resultMs ?? 10_000).catch(() => undefined);
  return { p, result };
}

// ---- 2.x routers (../shared/reference/ctrl-channel-2.x.md): the grouped hello, the router data model,
// service sessions as JWTs. Schemas here are written from the reference (section 2.1), not taken from
// src/fabric/rdm, so a field-number slip on either side shows as a mismatch.

export const T2 = { ConnectEvents: 20415, DataState: 20500, DataStateChangeSet: 20501, SubscribeToDataModelRequest: 20505, CurrentIndexMessage: 20506 };
export const UPSTREAM_2X_VERSION = 'v2.0.3|e86e337a|2026-08-20|linux|amd64';

const PublicKey = { data: { n: 1, type: 'bytes' }, kid: { n: 2, type: 'string' }, usages: { n: 3, type: 'enum', repeated: true }, format: { n: 4, type: 'enum' } } as const;
const Timestamp = { seconds: { n: 1, type: 'uint64' }, nanos: { n: 2, type: 'int32' } } as const;
const Event = {
  action: { n: 1, type: 'enum' },
  isSynthetic: { n: 3, type: 'bool' },
  identity: { n: 10, type: { message: { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, disabled: { n: 9, type: 'bool' } } } },
  service: { n: 11, type: { message: { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, encryptionRequired: { n: 3, type: 'bool' }, configs: { n: 4, type: 'string', repeated: true } } } },
  servicePolicy: { n: 12, type: { message: { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, policyType: { n: 3, type: 'enum' } } } },
  postureCheck: { n: 13, type: { message: { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, typeId: { n: 4, type: 'string' } } } },
  publicKey: { n: 14, type: { message: PublicKey } },
  // Revocation {id[1], ExpiresAt[2], type[3], issuedBefore[4]}, the times google.protobuf.Timestamp {seconds[1], nanos[2]}.
  revocation: { n: 15, type: { message: { id: { n: 1, type: 'string' }, expiresAt: { n: 2, type: { message: Timestamp } }, type: { n: 3, type: 'string' }, issuedBefore: { n: 4, type: { message: Timestamp } } } } },
  servicePolicyChange: { n: 16, type: { message: { policyId: { n: 1, type: 'string' }, relatedEntityIds: { n: 2, type: 'string', repeated: true }, relatedEntityType: { n: 3, type: 'enum' }, add: { n: 4, type: 'bool' } } } },
  // target (3) is 2.1's: service, router or other.
  configType: { n: 17, type: { message: { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, target: { n: 3, type: 'string' } } } },
  config: { n: 18, type: { message: { id: { n: 1, type: 'string' }, typeId: { n: 2, type: 'string' }, name: { n: 3, type: 'string' }, dataJson: { n: 4, type: 'string' } } } },
} as const;
export const RdmSchemas = {
  DataState: { events: { n: 1, type: { message: Event }, repeated: true }, endIndex: { n: 2, type: 'uint64' }, timelineId: { n: 3, type: 'string' } },
  ChangeSet: { index: { n: 1, type: 'uint64' }, isSynthetic: { n: 2, type: 'bool' }, changes: { n: 3, type: { message: Event }, repeated: true }, timestampId: { n: 4, type: 'string' }, previousIndex: { n: 5, type: 'uint64' } },
  SubscribeToDataModelRequest: { currentIndex: { n: 1, type: 'uint64' }, subscriptionDurationSeconds: { n: 2, type: 'uint32' }, renew: { n: 3, type: 'bool' }, timelineId: { n: 4, type: 'string' }, subscriptionId: { n: 5, type: 'string' } },
  ConnectEvents: {
    events: { n: 1, repeated: true, type: { message: { identityId: { n: 1, type: 'string' }, isConnected: { n: 2, type: 'bool' }, connectTimes: { n: 3, repeated: true, type: { message: { connectTime: { n: 1, type: 'uint64' }, srcAddr: { n: 2, type: 'string' }, dstAddr: { n: 3, type: 'string' } } } } } } },
    fullState: { n: 2, type: 'bool' },
  },
  // The 2.x form of the hello's link listeners (header 1000) is ctrl_pb.Listeners, as in 1.x.
} as const;
/** DataState.PublicKey usages and formats. */
export const KeyUsage = { JWTValidation: 0, ClientX509CertValidation: 1 };

/** A 2.1 router (openziti-2x.md section 3.2, item 1): its version, and its capability mask in 1002, bits 1, 2, 4, 5, 6 and 62 (RouterDataModel, -2). */
export const UPSTREAM_21_VERSION = 'v2.1.0-pre2|745d79dd|2026-08-21|linux|amd64';
export const ROUTER_21_CAPABILITIES = Buffer.from([0x40, 0, 0, 0, 0, 0, 0, 0x76]);

/**
 * CreateCircuitV3 (2.1 Connect-V2), headers only (common/ctrl_msg/messages.go): 15 identity id, 16 service
 * id, 17 circuit id (the router sends it empty), 14 the SDK's API session token, 12 fingerprints, 13
 * terminator instance id, 10 peer data (the router adds the dialer's id and name, 1115 and 1116).
 */
export function createCircuitV3Headers(q: { identityId: string; serviceId: string; apiSessionToken: string; fingerprints: string[]; peerData?: [number, Buffer][]; instanceId?: string; circuitId?: string }): [number, Buffer][] {
  return [
    [15, Buffer.from(q.identityId)],
    [16, Buffer.from(q.serviceId)],
    [17, Buffer.from(q.circuitId ?? '')],
    [14, Buffer.from(q.apiSessionToken)],
    [12, strings(q.fingerprints)],
    [13, Buffer.from(q.instanceId ?? '')],
    [10, bytesMap(q.peerData ?? [])],
  ];
}

export interface Hello2xOptions {
  /** Its version (header 4) and capability mask (1002): a 2.0.3 router's ([0x02]) unless given. */
  version?: string;
  capabilities?: Buffer;
  /** The group secret to bring (none: the controller makes one). */
  secret?: Buffer;
  /** Not the group's first underlay: a later one, naming this connection id. */
  later?: { connectionId: string };
  listeners?: { address: string; protocol: string; groups?: string[] }[];
  resultMs?: number;
}

/**
 * A 2.x router's first underlay (router/env/ctrls.go): version, capabilities (RouterMultiChannel, bit 1:
 * [0x02]) in 1002, link listeners in 1000, and the group headers 9 IsGrouped, 7 Type ctrl.default,
 * 11 IsFirstGroupConnection (only on the first).
 */
export async function connectRouter2x(port: number, r: EnrolledRouter, o: Hello2xOptions = {}): Promise<{ p: EdgePeer; result?: Frame }> {
  const p = await EdgePeer.connect(port, { cert: r.cert, key: r.key, alpn: ['ziti-ctrl'] });
  const headers: [number, Buffer][] = [
    [4, Buffer.from(o.version ?? UPSTREAM_2X_VERSION)],
    [1002, o.capabilities ?? Buffer.from([0x02])],
    [9, Buffer.from([1])],
    [7, Buffer.from('ctrl.default')],
  ];
  if (o.later) headers.push([0, Buffer.from(o.later.connectionId)]);
  else headers.push([11, Buffer.from([1])]);
  if (o.secret) headers.push([10, o.secret]);
  if (o.listeners) headers.push([1000, encode(Schemas.Listeners, { listeners: o.listeners })]);
  p.send(T.Hello, headers, Buffer.from(r.id), -1);
  const result = await p.next((f) => f.type === T.Result, o.resultMs ?? 10_000).catch(() => undefined);
  return { p, result };
}

/** Bit `n` of a capability mask (big-endian big-integer bytes), as upstream's capabilities.IsCapable reads it. */
export function capable(mask: Buffer | undefined, n: number): boolean {
  if (!mask) return false;
  let v = 0n;
  for (const b of mask) v = (v << 8n) | BigInt(b);
  return ((v >> BigInt(n)) & 1n) === 1n;
}

// ---- The router's own tunneler (its `tunnel` listener binding; edge_ctrl.proto of ziti 1.1.10 and 2.0.3,
// content types 20400-20414 and 20220/20221). Schemas written here from the .proto, not taken from
// src/fabric/ctrl/tunnel, so a field-number slip on either side shows as a mismatch.

export const TT = {
  CreateTunnelCircuitV2: 20220, CreateTunnelCircuitV2Response: 20221,
  CreateApiSession: 20400, CreateApiSessionResponse: 20401, CreateCircuitForService: 20402, CreateCircuitForServiceResponse: 20403,
  ListServices: 20404, ServiceList: 20405, CreateTunnelTerminator: 20406, CreateTunnelTerminatorResponse: 20407,
  UpdateTunnelTerminator: 20408, UpdateTunnelTerminatorResponse: 20409, RemoveTunnelTerminator: 20410, RemoveTunnelTerminatorResponse: 20411,
  TunnelHealthEvent: 20412, CreateTunnelTerminatorV2: 20413, CreateTunnelTerminatorV2Response: 20414,
};
const ApiSessionResponse: Schema = {
  sessionId: { n: 1, type: 'string' }, token: { n: 2, type: 'string' }, refreshIntervalSeconds: { n: 3, type: 'uint32' }, identityId: { n: 4, type: 'string' }, identityName: { n: 5, type: 'string' },
  defaultHostingPrecedence: { n: 6, type: 'enum' }, defaultHostingCost: { n: 7, type: 'uint32' }, appDataJson: { n: 8, type: 'string' },
  servicePrecedences: { n: 9, type: { map: ['string', 'enum'] } }, serviceCosts: { n: 10, type: { map: ['string', 'uint32'] } },
};
const SessionResponse: Schema = { sessionId: { n: 1, type: 'string' }, token: { n: 2, type: 'string' } };
export const TunnelPb: Record<string, Schema> = {
  CreateApiSessionRequest: {
    envInfo: { n: 1, type: { message: { arch: { n: 1, type: 'string' }, os: { n: 2, type: 'string' } } } },
    sdkInfo: { n: 2, type: { message: { appId: { n: 1, type: 'string' }, type: { n: 5, type: 'string' } } } },
    configTypes: { n: 3, type: 'string', repeated: true },
  },
  CreateApiSessionResponse: ApiSessionResponse,
  ServicesList: {
    lastUpdate: { n: 1, type: 'bytes' },
    services: { n: 2, repeated: true, type: { message: { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, permissions: { n: 3, type: 'string', repeated: true }, encryption: { n: 4, type: 'bool' }, config: { n: 5, type: 'bytes' }, tags: { n: 6, type: 'bytes' } } } },
  },
  CreateTunnelTerminatorRequest: {
    serviceName: { n: 1, type: 'string' }, sessionId: { n: 2, type: 'string' }, address: { n: 3, type: 'string' }, peerData: { n: 4, type: { map: ['uint32', 'bytes'] } },
    cost: { n: 5, type: 'uint32' }, precedence: { n: 6, type: 'enum' }, instanceId: { n: 7, type: 'string' }, instanceSecret: { n: 8, type: 'bytes' }, startTime: { n: 9, type: 'uint64' },
  },
  CreateTunnelTerminatorResponse: { apiSession: { n: 1, type: { message: ApiSessionResponse } }, session: { n: 2, type: { message: SessionResponse } }, terminatorId: { n: 3, type: 'string' }, startTime: { n: 4, type: 'uint64' } },
  CreateTunnelTerminatorRequestV2: {
    serviceId: { n: 1, type: 'string' }, address: { n: 2, type: 'string' }, peerData: { n: 3, type: { map: ['uint32', 'bytes'] } }, cost: { n: 4, type: 'uint32' },
    precedence: { n: 5, type: 'enum' }, instanceId: { n: 6, type: 'string' }, instanceSecret: { n: 7, type: 'bytes' }, startTime: { n: 8, type: 'uint64' },
  },
  CreateTunnelTerminatorResponseV2: { terminatorId: { n: 1, type: 'string' }, startTime: { n: 2, type: 'uint64' }, result: { n: 3, type: 'enum' }, msg: { n: 4, type: 'string' }, errorCode: { n: 5, type: 'uint32' }, retryHint: { n: 6, type: 'uint32' } },
  CreateCircuitForServiceRequest: { sessionId: { n: 1, type: 'string' }, serviceName: { n: 2, type: 'string' }, terminatorInstanceId: { n: 3, type: 'string' }, peerData: { n: 4, type: { map: ['uint32', 'bytes'] } } },
  CreateCircuitForServiceResponse: {
    apiSession: { n: 1, type: { message: ApiSessionResponse } }, session: { n: 2, type: { message: SessionResponse } }, circuitId: { n: 3, type: 'string' }, address: { n: 4, type: 'string' },
    peerData: { n: 5, type: { map: ['uint32', 'bytes'] } }, tags: { n: 6, type: { map: ['string', 'string'] } },
  },
  CreateTunnelCircuitV2Request: { serviceName: { n: 1, type: 'string' }, terminatorInstanceId: { n: 2, type: 'string' }, peerData: { n: 3, type: { map: ['uint32', 'bytes'] } } },
  CreateTunnelCircuitV2Response: { circuitId: { n: 1, type: 'string' }, address: { n: 2, type: 'string' }, peerData: { n: 3, type: { map: ['uint32', 'bytes'] } }, tags: { n: 4, type: { map: ['string', 'string'] } } },
  UpdateTunnelTerminatorRequest: { terminatorId: { n: 1, type: 'string' }, cost: { n: 2, type: 'uint32' }, precedence: { n: 3, type: 'enum' }, updatePrecedence: { n: 4, type: 'bool' }, updateCost: { n: 5, type: 'bool' } },
  SessionRemoved: { tokens: { n: 1, type: 'string', repeated: true }, ids: { n: 2, type: 'string', repeated: true } },
};
/** The config types a 1.1.10 router's tunneler asks for (router/xgress_edge_tunnel/fabric.go). */
export const TUNNELER_CONFIG_TYPES = ['f2dd2df0-9c04-4b84-a91e-71437ac229f1', 'cea49285-6c07-42cf-9f52-09a9b115c783', 'g7cIWbcGg', 'NH5p4FpGR', 'host.v2'];
