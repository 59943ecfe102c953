// The messages of an upstream router's own tunneler ("ER/T", its `tunnel` listener binding) on the control
// channel, as data (edge_ctrl.proto of ziti 1.1.10 and 2.0.3, content types 20400-20414 and 20220/20221):
// a 1.x router asks for an API session, polls its service list and creates terminators and circuits with
// sessions the controller keeps for it; a 2.x router reads its services from the router data model and
// creates terminators and circuits with no session at all (openziti-2x.md advisory 10).
import type { Schema } from '../../channel/protobuf.js';

export const TunnelType = {
  CreateTunnelCircuitV2Request: 20220,
  CreateTunnelCircuitV2Response: 20221,
  CreateApiSessionRequest: 20400,
  CreateApiSessionResponse: 20401,
  CreateCircuitForServiceRequest: 20402,
  CreateCircuitForServiceResponse: 20403,
  ListServicesRequest: 20404,
  ServiceList: 20405,
  CreateTunnelTerminatorRequest: 20406,
  CreateTunnelTerminatorResponse: 20407,
  UpdateTunnelTerminatorRequest: 20408,
  UpdateTunnelTerminatorResponse: 20409,
  RemoveTunnelTerminatorRequest: 20410,
  RemoveTunnelTerminatorResponse: 20411,
  TunnelHealthEvent: 20412,
  CreateTunnelTerminatorRequestV2: 20413,
  CreateTunnelTerminatorResponseV2: 20414,
} as const;

/** TunnelHealthEvent's headers (edge_ctrl_pb.Header): the terminator and whether its health check passed. */
export const TunnelHeader = { TerminatorId: 1022, CheckPassed: 1023 } as const;

const CreateApiSessionResponse: Schema = {
  sessionId: { n: 1, type: 'string' },
  token: { n: 2, type: 'string' },
  refreshIntervalSeconds: { n: 3, type: 'uint32' },
  identityId: { n: 4, type: 'string' },
  identityName: { n: 5, type: 'string' },
  defaultHostingPrecedence: { n: 6, type: 'enum' },
  defaultHostingCost: { n: 7, type: 'uint32' },
  appDataJson: { n: 8, type: 'string' },
  servicePrecedences: { n: 9, type: { map: ['string', 'enum'] } },
  serviceCosts: { n: 10, type: { map: ['string', 'uint32'] } },
};
const CreateSessionResponse: Schema = { sessionId: { n: 1, type: 'string' }, token: { n: 2, type: 'string' } };
const PeerData: { map: ['uint32', 'bytes'] } = { map: ['uint32', 'bytes'] };
const Tags: { map: ['string', 'string'] } = { map: ['string', 'string'] };

export const TunnelSchemas = {
  CreateApiSessionRequest: {
    envInfo: { n: 1, type: { message: { arch: { n: 1, type: 'string' }, os: { n: 2, type: 'string' }, osRelease: { n: 3, type: 'string' }, osVersion: { n: 4, type: 'string' }, hostname: { n: 5, type: 'string' }, domain: { n: 6, type: 'string' } } } },
    sdkInfo: { n: 2, type: { message: { appId: { n: 1, type: 'string' }, appVersion: { n: 2, type: 'string' }, branch: { n: 3, type: 'string' }, revision: { n: 4, type: 'string' }, type: { n: 5, type: 'string' }, version: { n: 6, type: 'string' } } } },
    configTypes: { n: 3, type: 'string', repeated: true },
  },
  CreateApiSessionResponse,
  CreateCircuitForServiceRequest: { sessionId: { n: 1, type: 'string' }, serviceName: { n: 2, type: 'string' }, terminatorInstanceId: { n: 3, type: 'string' }, peerData: { n: 4, type: PeerData } },
  CreateCircuitForServiceResponse: {
    apiSession: { n: 1, type: { message: CreateApiSessionResponse } },
    session: { n: 2, type: { message: CreateSessionResponse } },
    circuitId: { n: 3, type: 'string' },
    address: { n: 4, type: 'string' },
    peerData: { n: 5, type: PeerData },
    tags: { n: 6, type: Tags },
  },
  CreateTunnelCircuitV2Request: { serviceName: { n: 1, type: 'string' }, terminatorInstanceId: { n: 2, type: 'string' }, peerData: { n: 3, type: PeerData } },
  CreateTunnelCircuitV2Response: { circuitId: { n: 1, type: 'string' }, address: { n: 2, type: 'string' }, peerData: { n: 3, type: PeerData }, tags: { n: 4, type: Tags } },
  ServicesList: {
    lastUpdate: { n: 1, type: 'bytes' },
    services: {
      n: 2,
      repeated: true,
      type: { message: { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, permissions: { n: 3, type: 'string', repeated: true }, encryption: { n: 4, type: 'bool' }, config: { n: 5, type: 'bytes' }, tags: { n: 6, type: 'bytes' } } },
    },
  },
  CreateTunnelTerminatorRequest: {
    serviceName: { n: 1, type: 'string' },
    sessionId: { n: 2, type: 'string' },
    address: { n: 3, type: 'string' },
    peerData: { n: 4, type: PeerData },
    cost: { n: 5, type: 'uint32' },
    precedence: { n: 6, type: 'enum' },
    instanceId: { n: 7, type: 'string' },
    instanceSecret: { n: 8, type: 'bytes' },
    startTime: { n: 9, type: 'uint64' },
  },
  CreateTunnelTerminatorResponse: {
    apiSession: { n: 1, type: { message: CreateApiSessionResponse } },
    session: { n: 2, type: { message: CreateSessionResponse } },
    terminatorId: { n: 3, type: 'string' },
    startTime: { n: 4, type: 'uint64' },
  },
  CreateTunnelTerminatorRequestV2: {
    serviceId: { n: 1, type: 'string' },
    address: { n: 2, type: 'string' },
    peerData: { n: 3, type: PeerData },
    cost: { n: 4, type: 'uint32' },
    precedence: { n: 5, type: 'enum' },
    instanceId: { n: 6, type: 'string' },
    instanceSecret: { n: 7, type: 'bytes' },
    startTime: { n: 8, type: 'uint64' },
  },
  /** result, msg, errorCode and retryHint are 2.x's; a 1.x router in HA mode reads the first two. */
  CreateTunnelTerminatorResponseV2: {
    terminatorId: { n: 1, type: 'string' },
    startTime: { n: 2, type: 'uint64' },
    result: { n: 3, type: 'enum' },
    msg: { n: 4, type: 'string' },
    errorCode: { n: 5, type: 'uint32' },
    retryHint: { n: 6, type: 'uint32' },
  },
  UpdateTunnelTerminatorRequest: { terminatorId: { n: 1, type: 'string' }, cost: { n: 2, type: 'uint32' }, precedence: { n: 3, type: 'enum' }, updatePrecedence: { n: 4, type: 'bool' }, updateCost: { n: 5, type: 'bool' } },
} satisfies Record<string, Schema>;
