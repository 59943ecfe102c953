// The control channel's message catalogue (routers <-> controller, OpenZiti 1.1.x), as data: content
// types, header ids and the protobuf body schemas, field numbers as ../shared/reference/ctrl-channel-1.1.md
// gives them (section 2.1).
import type { Schema } from '../channel/protobuf.js';

export const CtrlType = {
  Fault: 1004,
  Route: 1005,
  Unroute: 1006,
  Metrics: 1007,
  RouteResult: 1022,
  CircuitConfirmation: 1034,
  RouterLinks: 1035,
  VerifyRouter: 1036,
  RemoveTerminatorsRequest: 1038,
  PeerStateChanges: 1050,
  ServerHello: 20000,
  ClientHello: 20001,
  Error: 20002,
  SessionRemoved: 20102,
  ApiSessionAdded: 20200,
  ApiSessionUpdated: 20201,
  ApiSessionRemoved: 20202,
  ApiSessionHeartbeat: 20203,
  RequestClientReSync: 20204,
  CreateCircuitRequest: 20205,
  CreateCircuitResponse: 20206,
  CreateTerminatorRequest: 20207,
  CreateTerminatorResponse: 20208,
  CreateTerminatorV2Request: 20216,
  CreateTerminatorV2Response: 20217,
  CreateCircuitV2Request: 20218,
  CreateCircuitV2Response: 20219,
  /** A router's certificates renewed a week before they expire (ZITI router/xgress_edge/certchecker.go). */
  EnrollmentCertsResponse: 20301,
  EnrollmentExtendRouterRequest: 20302,
  EnrollmentExtendRouterVerifyRequest: 20303,
} as const;

export const CtrlHeader = {
  /** Router hello: its link listeners (ctrl_pb.Listeners) and metadata (ctrl_pb.RouterMetadata). */
  Listeners: 10,
  RouterMetadata: 11,
  /** Controller hello reply: the capability mask (big-endian big integer bytes). */
  Capabilities: 12,
  // RouteResult
  RouteAttempt: 1101,
  RouteSuccess: 1102,
  RouteError: 1103,
  RouteErrorCode: 1104,
  // CreateCircuitV2 request / response (common/ctrl_msg/messages.go)
  CircuitPeerData: 10,
  CircuitSessionToken: 11,
  CircuitFingerprints: 12,
  CircuitTerminatorInstanceId: 13,
  CircuitApiSessionToken: 14,
  ResponseCircuitId: 11,
  ResponseAddress: 12,
  ResponsePeerData: 10,
  ResponseTags: 13,
  /** On an Error (20002): the edge error code. */
  EdgeErrorCode: 1014,
} as const;

/** Capabilities of a 1.1 controller: CreateTerminatorV2 (1), SingleRouterLinkSource (2), CreateCircuitV2 (3). */
export const CONTROLLER_CAPABILITIES = Buffer.from([0x0e]);

const Listener: Schema = {
  address: { n: 1, type: 'string' },
  protocol: { n: 2, type: 'string' },
  costTags: { n: 3, type: 'string', repeated: true },
  groups: { n: 4, type: 'string', repeated: true },
  localBinding: { n: 5, type: 'string' },
};

const ApiSession: Schema = { token: { n: 1, type: 'string' }, certFingerprints: { n: 2, type: 'string', repeated: true }, id: { n: 3, type: 'string' } };

export const Schemas = {
  ApiSessionAdded: { isFullState: { n: 1, type: 'bool' }, apiSessions: { n: 2, type: { message: ApiSession }, repeated: true } },
  ApiSessionRemoved: { tokens: { n: 1, type: 'string', repeated: true }, ids: { n: 2, type: 'string', repeated: true } },
  SessionRemoved: { tokens: { n: 1, type: 'string', repeated: true }, ids: { n: 2, type: 'string', repeated: true } },
  ApiSessionHeartbeat: { tokens: { n: 1, type: 'string', repeated: true } },
  ServerHello: { version: { n: 1, type: 'string' }, data: { n: 2, type: { map: ['string', 'string'] } } },
  ClientHello: {
    version: { n: 1, type: 'string' },
    hostname: { n: 2, type: 'string' },
    protocols: { n: 3, type: 'string', repeated: true },
    listeners: {
      n: 10,
      repeated: true,
      type: { message: { address: { n: 10, type: 'string' }, advertise: { n: 20, type: { message: { value: { n: 10, type: 'string' }, protocol: { n: 20, type: 'string' }, hostname: { n: 30, type: 'string' }, port: { n: 40, type: 'int32' } } } } } },
    },
  },
  CreateTerminatorV2Request: {
    address: { n: 1, type: 'string' },
    sessionToken: { n: 2, type: 'string' },
    fingerprints: { n: 3, type: 'string', repeated: true },
    peerData: { n: 4, type: { map: ['uint32', 'bytes'] } },
    cost: { n: 5, type: 'uint32' },
    precedence: { n: 6, type: 'enum' },
    instanceId: { n: 7, type: 'string' },
    instanceSecret: { n: 8, type: 'bytes' },
    apiSessionToken: { n: 9, type: 'string' },
  },
  /** The legacy forms, for routers that see no V2 capability bits (edge_ctrl.proto). */
  CreateTerminatorRequest: {
    sessionToken: { n: 1, type: 'string' },
    fingerprints: { n: 2, type: 'string', repeated: true },
    peerData: { n: 3, type: { map: ['uint32', 'bytes'] } },
    cost: { n: 4, type: 'uint32' },
    precedence: { n: 5, type: 'enum' },
    instanceId: { n: 6, type: 'string' },
    instanceSecret: { n: 7, type: 'bytes' },
    apiSessionToken: { n: 8, type: 'string' },
  },
  CreateCircuitRequest: {
    sessionToken: { n: 1, type: 'string' },
    fingerprints: { n: 2, type: 'string', repeated: true },
    terminatorInstanceId: { n: 3, type: 'string' },
    peerData: { n: 4, type: { map: ['uint32', 'bytes'] } },
    apiSessionToken: { n: 5, type: 'string' },
  },
  CreateCircuitResponse: { circuitId: { n: 1, type: 'string' }, address: { n: 2, type: 'string' }, peerData: { n: 3, type: { map: ['uint32', 'bytes'] } }, tags: { n: 4, type: { map: ['string', 'string'] } } },
  CreateTerminatorV2Response: { terminatorId: { n: 1, type: 'string' }, result: { n: 2, type: 'enum' }, msg: { n: 3, type: 'string' } },
  /** Certificate renewal (edge_ctrl.proto): the request, the new certificates, and their verification. */
  EnrollmentExtendRouterRequest: { clientCertCsr: { n: 1, type: 'string' }, serverCertCsr: { n: 2, type: 'string' }, requireVerification: { n: 3, type: 'bool' } },
  EnrollmentCertsResponse: { clientCertPem: { n: 1, type: 'string' }, serverCertPem: { n: 2, type: 'string' }, caCertsPem: { n: 3, type: 'string' } },
  EnrollmentExtendRouterVerifyRequest: { clientCertPem: { n: 1, type: 'string' } },
  /** edge_ctrl_pb.Error, the verification's answer (an empty code is success); not the plain-text 20002 of edge requests. */
  EdgeErrorBody: { code: { n: 1, type: 'string' }, message: { n: 2, type: 'string' }, cause: { n: 3, type: 'string' } },
  Route: {
    circuitId: { n: 1, type: 'string' },
    attempt: { n: 2, type: 'uint32' },
    egress: { n: 3, type: { message: { binding: { n: 1, type: 'string' }, address: { n: 2, type: 'string' }, destination: { n: 3, type: 'string' }, peerData: { n: 4, type: { map: ['uint32', 'bytes'] } } } } },
    forwards: { n: 4, repeated: true, type: { message: { srcAddress: { n: 1, type: 'string' }, dstAddress: { n: 2, type: 'string' }, dstType: { n: 3, type: 'enum' } } } },
    timeout: { n: 6, type: 'uint64' },
    tags: { n: 7, type: { map: ['string', 'string'] } },
  },
  Unroute: { circuitId: { n: 1, type: 'string' }, now: { n: 2, type: 'bool' } },
  Fault: { subject: { n: 1, type: 'enum' }, id: { n: 2, type: 'string' }, iteration: { n: 3, type: 'uint32' } },
  RemoveTerminatorsRequest: { terminatorIds: { n: 1, type: 'string', repeated: true } },
  CircuitConfirmation: { circuitIds: { n: 1, type: 'string', repeated: true } },
  /** metrics_pb.MetricsMessage, only what path costs read: histograms by name (each a Histogram, below). */
  Metrics: { sourceId: { n: 2, type: 'string' }, histograms: { n: 8, type: { map: ['string', 'bytes'] } } },
  Histogram: { count: { n: 1, type: 'uint64' }, mean: { n: 3, type: 'double' } },
  /** Hello header 10 and 11. */
  Listeners: { listeners: { n: 1, type: { message: Listener }, repeated: true } },
  RouterMetadata: { capabilities: { n: 1, type: 'enum', repeated: true } },
  RouterLinks: {
    links: {
      n: 1,
      repeated: true,
      type: {
        message: {
          id: { n: 1, type: 'string' },
          destRouterId: { n: 2, type: 'string' },
          linkProtocol: { n: 3, type: 'string' },
          linkCostTags: { n: 4, type: 'string', repeated: true },
          dialAddress: { n: 5, type: 'string' },
          iteration: { n: 6, type: 'uint32' },
        },
      },
    },
  },
  VerifyRouter: { routerId: { n: 1, type: 'string' }, fingerprints: { n: 2, type: 'string', repeated: true } },
  PeerStateChanges: {
    changes: {
      n: 1,
      repeated: true,
      type: { message: { id: { n: 1, type: 'string' }, version: { n: 2, type: 'string' }, state: { n: 3, type: 'enum' }, listeners: { n: 4, type: { message: Listener }, repeated: true } } },
    },
  },
} satisfies Record<string, Schema>;

export const TerminatorResult = { Success: 0, FailedIdConflict: 1, FailedOther: 2, FailedBusy: 3, FailedInvalidSession: 4 } as const;
export const PeerState = { Healthy: 0, Unhealthy: 1, Removed: 2 } as const;
/** RouterMetadata capability: the router dials and reports its own links. */
export const LINK_MANAGEMENT = 1;
export const DestType = { Start: 0, End: 1, Link: 2 } as const;
export const FaultSubject = { IngressFault: 0, EgressFault: 1, LinkFault: 2, ForwardFault: 3, UnknownOwnerForwardFault: 4, LinkDuplicateFault: 5 } as const;
