// The router data model's bodies (edge_ctrl.proto `DataState.*`, ../shared/reference/ctrl-channel-2.x.md
// section 2.1; field numbers as OpenZiti 2.0.3 has them), for the protobuf codec of channel/protobuf.ts.
import type { Schema } from '../channel/protobuf.js';

export const Action = { Create: 0, Update: 1, Delete: 2 } as const;
export const KeyUsage = { JWTValidation: 0, ClientX509CertValidation: 1 } as const;
export const KeyFormat = { X509CertDer: 0, PKIXPublicKey: 1 } as const;
export const RelatedType = { Service: 1, Identity: 2, PostureCheck: 3 } as const;

const PublicKey: Schema = { data: { n: 1, type: 'bytes' }, kid: { n: 2, type: 'string' }, usages: { n: 3, type: 'enum', repeated: true }, format: { n: 4, type: 'enum' } };
/** target (3): 2.1's, what the type's configs are for (service, router, other); a 2.0 router skips it. */
const ConfigType: Schema = { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, target: { n: 3, type: 'string' } };
const Config: Schema = { id: { n: 1, type: 'string' }, typeId: { n: 2, type: 'string' }, name: { n: 3, type: 'string' }, dataJson: { n: 4, type: 'string' } };
const Identity: Schema = {
  id: { n: 1, type: 'string' },
  name: { n: 2, type: 'string' },
  defaultHostingPrecedence: { n: 3, type: 'enum' },
  defaultHostingCost: { n: 4, type: 'uint32' },
  serviceHostingPrecedences: { n: 5, type: { map: ['string', 'enum'] } },
  serviceHostingCosts: { n: 6, type: { map: ['string', 'uint32'] } },
  appDataJson: { n: 7, type: 'bytes' },
  serviceConfigs: { n: 8, type: { map: ['string', { message: { configs: { n: 1, type: { map: ['string', 'string'] } } } }] } },
  disabled: { n: 9, type: 'bool' },
};
const Service: Schema = { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, encryptionRequired: { n: 3, type: 'bool' }, configs: { n: 4, type: 'string', repeated: true } };
const ServicePolicy: Schema = { id: { n: 1, type: 'string' }, name: { n: 2, type: 'string' }, policyType: { n: 3, type: 'enum' } };
const ServicePolicyChange: Schema = { policyId: { n: 1, type: 'string' }, relatedEntityIds: { n: 2, type: 'string', repeated: true }, relatedEntityType: { n: 3, type: 'enum' }, add: { n: 4, type: 'bool' } };
const Process: Schema = { osType: { n: 1, type: 'string' }, path: { n: 2, type: 'string' }, hashes: { n: 3, type: 'string', repeated: true }, fingerprints: { n: 4, type: 'string', repeated: true } };
const PostureCheck: Schema = {
  id: { n: 1, type: 'string' },
  name: { n: 2, type: 'string' },
  typeId: { n: 4, type: 'string' },
  mac: { n: 7, type: { message: { macAddresses: { n: 1, type: 'string', repeated: true } } } },
  // TimeoutSeconds is an int64 (-1: none): a negative int32 is written the same way, in ten bytes.
  mfa: { n: 8, type: { message: { timeoutSeconds: { n: 1, type: 'int32' }, promptOnWake: { n: 2, type: 'bool' }, promptOnUnlock: { n: 3, type: 'bool' }, ignoreLegacyEndpoints: { n: 4, type: 'bool' } } } },
  osList: { n: 9, type: { message: { osList: { n: 1, repeated: true, type: { message: { osType: { n: 1, type: 'string' }, osVersions: { n: 2, type: 'string', repeated: true } } } } } } },
  process: { n: 10, type: { message: Process } },
  processMulti: { n: 11, type: { message: { semantic: { n: 1, type: 'string' }, processes: { n: 2, type: { message: Process }, repeated: true } } } },
  domains: { n: 12, type: { message: { domains: { n: 1, type: 'string', repeated: true } } } },
};

/** google.protobuf.Timestamp: seconds (an int64, never negative here) and nanos. */
const Timestamp: Schema = { seconds: { n: 1, type: 'uint64' }, nanos: { n: 2, type: 'int32' } };
/** type: API_SESSION (id is an API session's, z_asid), IDENTITY (an identity's, with issuedBefore) or JTI (a token's jti). */
const Revocation: Schema = { id: { n: 1, type: 'string' }, expiresAt: { n: 2, type: { message: Timestamp } }, type: { n: 3, type: 'string' }, issuedBefore: { n: 4, type: { message: Timestamp } } };

const Event: Schema = {
  action: { n: 1, type: 'enum' },
  isSynthetic: { n: 3, type: 'bool' },
  identity: { n: 10, type: { message: Identity } },
  service: { n: 11, type: { message: Service } },
  servicePolicy: { n: 12, type: { message: ServicePolicy } },
  postureCheck: { n: 13, type: { message: PostureCheck } },
  publicKey: { n: 14, type: { message: PublicKey } },
  revocation: { n: 15, type: { message: Revocation } },
  servicePolicyChange: { n: 16, type: { message: ServicePolicyChange } },
  configType: { n: 17, type: { message: ConfigType } },
  config: { n: 18, type: { message: Config } },
};

export const RdmSchemas = {
  Event,
  DataState: { events: { n: 1, type: { message: Event }, repeated: true }, endIndex: { n: 2, type: 'uint64' }, timelineId: { n: 3, type: 'string' } },
  ChangeSet: { index: { n: 1, type: 'uint64' }, isSynthetic: { n: 2, type: 'bool' }, changes: { n: 3, type: { message: Event }, repeated: true }, timestampId: { n: 4, type: 'string' }, previousIndex: { n: 5, type: 'uint64' } },
  SubscribeToDataModelRequest: { currentIndex: { n: 1, type: 'uint64' }, subscriptionDurationSeconds: { n: 2, type: 'uint32' }, renew: { n: 3, type: 'bool' }, timelineId: { n: 4, type: 'string' }, subscriptionId: { n: 5, type: 'string' } },
} satisfies Record<string, Schema>;
