// The control channel's message catalogue (routers <-> controller, OpenZiti 1.1.x and 2.x), as data:
// content types, header ids and the protobuf body schemas, field numbers as
// ../shared/reference/ctrl-channel-1.1.md (section 2.1) and ctrl-channel-2.x.md (section 1.3) give them;
// the router data model's own bodies are in ../rdm/schemas.ts.
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
  /** Whether the router still holds terminators the controller kept for it (its reconnect, our restart); the reply says which. */
  ValidateTerminatorsV2Request: 1041,
  ValidateTerminatorsV2Response: 1042,
  PeerStateChanges: 1050,
  /** 2.x: the router's network interfaces, answered with a Result. */
  UpdateRouterInterfaces: 1052,
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
  /** An SDK's UpdateBind (cost, precedence), from a router. */
  UpdateTerminatorRequest: 20209,
  UpdateTerminatorResponse: 20210,
  CreateTerminatorV2Request: 20216,
  CreateTerminatorV2Response: 20217,
  CreateCircuitV2Request: 20218,
  CreateCircuitV2Response: 20219,
  /** 2.1 Connect-V2: a dial the router authorized from its data model, for an OIDC API session (ctrl-channel-2.x.md section 1.5d). */
  CreateCircuitV3Request: 20222,
  CreateCircuitV3Response: 20223,
  /** A router's certificates renewed a week before they expire (ZITI router/xgress_edge/certchecker.go). */
  EnrollmentCertsResponse: 20301,
  EnrollmentExtendRouterRequest: 20302,
  EnrollmentExtendRouterVerifyRequest: 20303,
  /** 2.x: which identities are connected to the router (ctrl-channel-2.x.md section 1.4, step 8). */
  ConnectEvents: 20415,
  /** 2.x: the router data model (../rdm/): a full snapshot, a change set, the router's subscription, our index. */
  DataState: 20500,
  DataStateChangeSet: 20501,
  SubscribeToDataModelRequest: 20505,
  CurrentIndexMessage: 20506,
} as const;

export const CtrlHeader = {
  /** A 1.x router's hello: its link listeners (ctrl_pb.Listeners) and metadata (ctrl_pb.RouterMetadata). */
  Listeners: 10,
  RouterMetadata: 11,
  /** Controller hello reply: the capability mask (big-endian big integer bytes), where a 1.x router reads it. */
  Capabilities: 12,
  /**
   * A 2.x router's hello (10 to 12 are the grouped channel's there): its link listeners, its capability
   * mask (RouterMultiChannel), the addresses it listens for controllers on; and our reply's mask.
   */
  ListenersV2: 1000,
  CapabilitiesV2: 1002,
  CtrlChanListeners: 1003,
  // ServerHello / ClientHello / the router data model (edge_ctrl_pb.Header)
  RouterDataModel: 1024,
  RouterDataModelIndex: 1025,
  RouterDataModelSubscriptionId: 1026,
  // The instant sync's API-session chunks
  SyncStrategyType: 1013,
  SyncStrategyState: 1014,
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
  // CreateCircuitV3 request (2.1): the dialing identity, the service, a circuit id the router chose (empty: ours)
  CircuitIdentityId: 15,
  CircuitServiceId: 16,
  CircuitId: 17,
  /** On an Error (20002): the edge error code, and (2.1) whether and how the router may try again (RetryHint, uint32). */
  EdgeErrorCode: 1014,
  ErrorRetryHint: 18,
} as const;

/** Capabilities of a 1.1 controller: CreateTerminatorV2 (1), SingleRouterLinkSource (2), CreateCircuitV2 (3). */
export const CONTROLLER_CAPABILITIES = Buffer.from([0x0e]);
/**
 * What 2.x routers are told (ctrl-channel-2.x.md section 1.2): bits 1 to 3 as above, RouterDataModel (4)
 * and SupportsJWTLegacySessions (6), without which a 2.x router refuses the controller. Not
 * GroupedCtrlChan (5): the router then opens no second underlay (channel/grouped.ts).
 */
export const CONTROLLER_CAPABILITIES_V2 = Buffer.from([0x5e]);
/** Capability bits of the masks: ours (above) and a router's (RouterMultiChannel: 2.x, headers 1000 and up). */
export const Capability = { CreateTerminatorV2: 1, SingleRouterLinkSource: 2, CreateCircuitV2: 3, RouterDataModel: 4, GroupedCtrlChan: 5, SupportsJWTLegacySessions: 6 } as const;
export const RouterCapability = { MultiChannel: 1 } as const;

/** Whether bit `n` is set in a capability mask (a big-endian big integer's bytes). */
export function hasCapability(mask: Buffer | undefined, n: number): boolean {
  if (!mask?.length) return false;
  const byte = mask.length - 1 - (n >> 3);
  return byte >= 0 && (mask[byte] & (1 << (n & 7))) !== 0;
}

const Listener: Schema = {
  address: { n: 1, type: 'string' },
  protocol: { n: 2, type: 'string' },
  costTags: { n: 3, type: 'string', repeated: true },
  groups: { n: 4, type: 'string', repeated: true },
  localBinding: { n: 5, type: 'string' },
};

/** identityId (4) is 2.x's; a 1.x router skips it. */
const ApiSession: Schema = { token: { n: 1, type: 'string' }, certFingerprints: { n: 2, type: 'string', repeated: true }, id: { n: 3, type: 'string' }, identityId: { n: 4, type: 'string' } };

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
    data: { n: 4, type: { map: ['string', 'string'] } },
    protocolPorts: { n: 5, type: 'string', repeated: true },
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
  UpdateTerminatorRequest: {
    sessionToken: { n: 1, type: 'string' },
    fingerprints: { n: 2, type: 'string', repeated: true },
    terminatorId: { n: 3, type: 'string' },
    cost: { n: 4, type: 'uint32' },
    precedence: { n: 5, type: 'enum' },
    updatePrecedence: { n: 6, type: 'bool' },
    updateCost: { n: 7, type: 'bool' },
    apiSessionToken: { n: 8, type: 'string' },
  },
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
  ValidateTerminatorsV2Request: {
    terminators: { n: 1, repeated: true, type: { message: { id: { n: 1, type: 'string' }, binding: { n: 2, type: 'string' }, address: { n: 3, type: 'string' }, marker: { n: 4, type: 'uint64' } } } },
    fixInvalid: { n: 2, type: 'bool' },
  },
  /** states: terminator id -> RouterTerminatorState{valid, reason (UnknownBinding 0, UnknownTerminator 1, BadState 2), detail, marker}. */
  ValidateTerminatorsV2Response: {
    states: { n: 1, type: { map: ['string', { message: { valid: { n: 1, type: 'bool' }, reason: { n: 2, type: 'enum' }, detail: { n: 3, type: 'string' }, marker: { n: 4, type: 'uint64' } } }] } },
  },
  CircuitConfirmation: { circuitIds: { n: 1, type: 'string', repeated: true } },
  /** metrics_pb.MetricsMessage, only what path costs read: histograms by name (each a Histogram, below). */
  Metrics: { sourceId: { n: 2, type: 'string' }, histograms: { n: 8, type: { map: ['string', 'bytes'] } } },
  Histogram: { count: { n: 1, type: 'uint64' }, mean: { n: 3, type: 'double' } },
  /** 2.x: which identities came and went on a router (fullState: all of them now). */
  ConnectEvents: {
    events: {
      n: 1,
      repeated: true,
      type: { message: { identityId: { n: 1, type: 'string' }, isConnected: { n: 2, type: 'bool' }, connectTimes: { n: 3, repeated: true, type: { message: { connectTime: { n: 1, type: 'uint64' }, srcAddr: { n: 2, type: 'string' }, dstAddr: { n: 3, type: 'string' } } } } } },
    },
    fullState: { n: 2, type: 'bool' },
  },
  /** Hello header 10 and 11 (1.x), 1000 (2.x). */
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
