import type { Kysely, Transaction } from 'kysely';
// Row types as Kysely sees them (camelCase; the CamelCasePlugin maps to snake_case columns).
// Portable representation, identical on SQLite and PostgreSQL: booleans are 0/1 integers,
// timestamps ISO-8601 UTC strings (they sort correctly as text), maps and lists JSON text.

export interface BaseRow {
  id: string;
  createdAt: string;
  updatedAt: string;
  tags: string;
}

export interface IdentityTypeRow extends BaseRow {
  name: string;
}

export interface AuthPolicyRow extends BaseRow {
  name: string;
  primaryJson: string;
  secondaryJson: string;
  isSystem: number;
}

export interface IdentityRow extends BaseRow {
  name: string;
  typeId: string;
  isAdmin: number;
  isDefaultAdmin: number;
  authPolicyId: string;
  externalId: string | null;
  defaultHostingPrecedence: string;
  defaultHostingCost: number;
  serviceHostingCosts: string;
  serviceHostingPrecedences: string;
  appData: string;
  roleAttributes: string;
  /** The role attributes its CA's claim rules gave it at its last certificate login (JSON list; model/pki/claim-attributes.ts). */
  claimRoleAttributes: string;
  envInfo: string;
  sdkInfo: string;
  disabled: number;
  disabledAt: string | null;
  disabledUntil: string | null;
  /** JSON list of permission names (model/permissions.ts). */
  permissions: string;
}

export interface ApiTokenRow extends BaseRow {
  name: string;
  identityId: string;
  tokenHash: string;
  readOnly: number;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

export interface AuthenticatorRow extends BaseRow {
  identityId: string;
  method: string;
  username: string | null;
  passwordHash: string | null;
  certPem: string | null;
  fingerprint: string | null;
  isIssuedByNetwork: number;
  caId: string | null;
  unverifiedCertPem: string | null;
  unverifiedFingerprint: string | null;
  failedAttempts: number;
  lockedUntil: string | null;
  /** An administrator asked for the certificate to be extended (request-extend), and with a new key. */
  isExtendRequested: number;
  isKeyRollRequested: number;
  extendRequestedAt: string | null;
  /** The last extension gave the certificate a new key. */
  lastExtendRolledKeys: number;
  /** The last certificate login's chain resolved to the controller's root. */
  lastAuthResolvedToRoot: number;
}

/** A revoked JWT id, API session or identity (model/auth/revocations.ts). */
export interface RevocationRow extends BaseRow {
  type: string;
  expiresAt: string;
  /** Tokens of an IDENTITY revocation issued before this no longer count; later ones do. */
  issuedBefore: string;
}

export interface MfaRow extends BaseRow {
  identityId: string;
  secret: string;
  lastStep: number;
  isVerified: number;
  recoveryCodes: string;
}

export interface ExternalJwtSignerRow extends BaseRow {
  name: string;
  certPem: string | null;
  fingerprint: string | null;
  commonName: string | null;
  notBefore: string | null;
  notAfter: string | null;
  jwksEndpoint: string | null;
  kid: string | null;
  issuer: string;
  audience: string | null;
  claimsProperty: string;
  clientId: string | null;
  externalAuthUrl: string | null;
  enabled: number;
  useExternalId: number;
  scopes: string;
  /** ACCESS or ID: the provider's token a client presents. */
  targetToken: string;
  enrollNameClaimsSelector: string;
  enrollAttributeClaimsSelector: string;
  /** Its JWTs may enroll new identities (POST /enroll/token) that get a certificate (cert) or log in with its JWTs (token). */
  enrollToCertEnabled: number;
  enrollToTokenEnabled: number;
  /** The auth policy of identities it enrolls; null: the default one. */
  enrollAuthPolicyId: string | null;
}

export interface CaRow extends BaseRow {
  name: string;
  certPem: string;
  fingerprint: string;
  verificationToken: string;
  identityNameFormat: string;
  externalIdClaim: string | null;
  isVerified: number;
  isAutoCaEnrollmentEnabled: number;
  isOttCaEnrollmentEnabled: number;
  isAuthEnabled: number;
  identityRoles: string;
  /** ztc's (ziti#1390): a router presenting a certificate this CA issued is created and enrolled on the control channel. */
  isEdgeRouterEnrollmentEnabled: number;
  /** The role attributes of the edge routers enrolled through it (JSON list). */
  edgeRouterRoles: string;
  /** ztc's (ziti#827): rules turning claims of its certificates into role attributes (JSON, model/pki/claim-attributes.ts). */
  roleAttributeClaims: string;
}

export interface EnrollmentRow extends BaseRow {
  identityId: string | null;
  method: string;
  tokenHash: string;
  jwt: string;
  expiresAt: string;
  caId: string | null;
  username: string | null;
  routerId: string | null;
}

export interface ApiSessionCertificateRow extends BaseRow {
  apiSessionId: string;
  certPem: string;
  fingerprint: string;
  subject: string;
  validFrom: string;
  validTo: string;
}

export interface ApiSessionRow extends BaseRow {
  tokenHash: string;
  /** The token sealed (model/secrets.ts), for upstream routers; null for sessions made before. */
  tokenSealed: string | null;
  identityId: string;
  authenticatorId: string;
  ipAddress: string;
  configTypes: string;
  isMfaRequired: number;
  isMfaComplete: number;
  isCertExtendable: number;
  lastActivityAt: string;
  /** A JWT API session (OIDC) ends here, at its latest refresh token's expiry; null: a legacy one, ended by idleness. */
  expiresAt: string | null;
  /** The external JWT signer whose JWT this session still owes (its auth policy's secondary.requireExtJwtSigner); null: none owed. */
  extJwtPending: string | null;
}

/** An OIDC authorization request, from /oidc/authorize until its code is exchanged (model/auth/oidc/). */
export interface OidcAuthRequestRow {
  id: string;
  createdAt: string;
  expiresAt: string;
  clientId: string;
  redirectUri: string;
  state: string;
  nonce: string;
  codeChallenge: string;
  remoteAddress: string;
  requestedMethod: string;
  identityId: string | null;
  authenticatorId: string | null;
  authTime: string | null;
  certFingerprint: string | null;
  sdkInfo: string | null;
  envInfo: string | null;
  csrPem: string | null;
  codeHash: string | null;
  codeExpiresAt: string | null;
  codeUsedAt: string | null;
  apiSessionId: string | null;
  scopes: string;
  configTypes: string;
  amr: string;
  totpRequired: number;
  totpEnrolled: number;
  isCertExtendable: number;
  /** The signer the identity's auth policy requires a JWT from as a second factor (amr `ejs:<id>` once shown). */
  extJwtSigner: string | null;
}

export interface EntityRoleAttributeRow {
  entityId: string;
  attribute: string;
}

export interface EntityTagRow {
  entityId: string;
  tagKey: string;
  kind: string;
  value: string | null;
}

export interface ConfigTypeRow extends BaseRow {
  name: string;
  schema: string;
  /** 2.1: what its configs are for: service, router or other (0043; fixed at create). */
  target: string;
}

export interface ConfigRow extends BaseRow {
  name: string;
  configTypeId: string;
  data: string;
}

export interface ServiceRow extends BaseRow {
  name: string;
  maxIdleTimeMillis: number;
  terminatorStrategy: string;
  encryptionRequired: number;
  roleAttributes: string;
}

export interface ServiceConfigRow {
  serviceId: string;
  configTypeId: string;
  configId: string;
}

export interface IdentityServiceConfigRow extends ServiceConfigRow {
  identityId: string;
}

export interface RouterRow extends BaseRow {
  name: string;
  cost: number;
  hostname: string;
  fingerprint: string | null;
  certPem: string | null;
  serverCertPem: string | null;
  isEdge: number;
  noTraversal: number;
  disabled: number;
  isTunnelerEnabled: number;
  isVerified: number;
  roleAttributes: string;
  appData: string;
  supportedProtocols: string;
  onlineUntil: string | null;
  /** The controller whose embedded edge router this is (null: any other router). */
  controllerId: string | null;
  /** JSON: the link listeners an upstream router's hello announced (ctrl_pb.Listener objects). */
  linkListeners: string;
  /** The version header of its last control-channel hello: Version|Revision|BuildDate|OS|Arch. */
  versionInfo: string | null;
  /** The capability mask its last hello announced (header 1002), as a decimal string; null: none told. */
  capabilitiesMask: string | null;
  /** JSON: control-channel listeners a controller may dial it at (address -> groups), as given by an admin. */
  ctrlChanListeners: string;
  /** JSON: ids of configs aimed at the router (upstream 2.1's router configs). */
  configs: string;
}

export interface LinkRow extends BaseRow {
  srcRouterId: string;
  dstRouterId: string;
  protocol: string;
  dialAddress: string;
  iteration: number;
  staticCost: number;
  srcLatency: number;
  dstLatency: number;
  cost: number;
  /** The controller whose router reported it. */
  controllerId: string;
}

export interface CircuitRow extends BaseRow {
  serviceId: string;
  /** The dialing identity. */
  clientId: string;
  hostId: string;
  terminatorId: string;
  /** JSON arrays: the routers of the path (ingress first) and the links between them. */
  routerIds: string;
  linkIds: string;
  controllerId: string;
}

interface PolicyBase extends BaseRow {
  name: string;
  semantic: string;
}

export interface EdgeRouterPolicyRow extends PolicyBase {
  isSystem: number;
  identityRoles: string;
  edgeRouterRoles: string;
}

export interface ServiceEdgeRouterPolicyRow extends PolicyBase {
  serviceRoles: string;
  edgeRouterRoles: string;
}

export interface ServicePolicyRow extends PolicyBase {
  type: string;
  identityRoles: string;
  serviceRoles: string;
  postureCheckRoles: string;
}

export interface PostureCheckRow extends BaseRow {
  name: string;
  typeId: string;
  roleAttributes: string;
  data: string;
  version: number;
  /** 1: failures are recorded, never enforced (ziti#2095). */
  reportOnly: number;
}

export interface PolicyRoleRow {
  policyId: string;
  side: string;
  role: string;
  kind: string;
  semantic: string;
}

export interface PolicyMemberRow {
  policyId: string;
  kind: string;
  side: string;
  entityId: string;
}

export interface SessionRow extends BaseRow {
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  type: string;
  tokenHash: string;
  tokenSealed: string | null;
  /** What granted it when it was made (JSON: service policies, posture checks passed); null before 0037. */
  grantedBy: string | null;
}

export interface TerminatorRow extends BaseRow {
  serviceId: string;
  routerId: string;
  binding: string;
  address: string;
  identity: string;
  identitySecret: string | null;
  cost: number;
  precedence: string;
  hostId: string | null;
  /** An SDK's terminator on an upstream router: its Bind session and the peer data the router sent (JSON, base64 values). */
  sessionId: string | null;
  peerData: string | null;
}

export interface PostureResponseRow {
  apiSessionId: string;
  checkId: string;
  typeId: string;
  identityId: string;
  updatedAt: string;
  data: string;
}

export interface FailedServiceRequestRow {
  id: string;
  identityId: string;
  apiSessionId: string;
  serviceId: string;
  serviceName: string;
  sessionType: string;
  at: string;
  policyFailures: string;
  /** 1: only report-only checks failed, and the session was granted. */
  reportOnly: number;
}

export interface ChangeMarkerRow {
  name: string;
  changedAt: string;
}

export interface IdentityTraceRow {
  identityId: string;
  traceId: string;
  channels: string;
  until: string;
}

export interface ControllerRow extends BaseRow {
  name: string;
  certPem: string;
  fingerprint: string;
  lastJoinedAt: string;
  lastSeenAt: string;
  apiAddresses: string;
  /** Its replaced server certificates whose keys may still have signed unexpired tokens: [{certPem, retiredAt}] (JSON). */
  retiredCerts: string;
  /** Where its control channel listens (tls:host:port), null with --no-ctrl. */
  ctrlAddress: string | null;
}

/** The intermediate CA the controllers of a database share (model/pki/shared-intermediate.ts). */
export interface PkiIntermediateRow {
  /** SHA-256 of the certificate's DER, lower-case hex. */
  id: string;
  certPem: string;
  /** Its private key, sealed with the secrets key (model/secrets.ts). */
  keySealed: string;
  /** The id of the intermediate it replaced (unique: one replacement each), null for the first published. */
  replaces: string | null;
  controllerId: string;
  createdAt: string;
}

export interface IntegrityRunRow {
  id: number;
  startedAt: string | null;
  endedAt: string | null;
  error: string | null;
  inProgress: number;
  fixingErrors: number;
  tooManyErrors: number;
  results: string;
  /** host:pid:nonce of the process running the scan. */
  owner: string | null;
  heartbeatAt: string | null;
}

export interface Database {
  sessions: SessionRow;
  terminators: TerminatorRow;
  links: LinkRow;
  circuits: CircuitRow;
  postureResponses: PostureResponseRow;
  failedServiceRequests: FailedServiceRequestRow;
  changeMarkers: ChangeMarkerRow;
  identityTraces: IdentityTraceRow;
  controllers: ControllerRow;
  pkiIntermediates: PkiIntermediateRow;
  integrityRuns: IntegrityRunRow;
  services: ServiceRow;
  serviceConfigs: ServiceConfigRow;
  identityServiceConfigs: IdentityServiceConfigRow;
  routers: RouterRow;
  edgeRouterPolicies: EdgeRouterPolicyRow;
  serviceEdgeRouterPolicies: ServiceEdgeRouterPolicyRow;
  servicePolicies: ServicePolicyRow;
  postureChecks: PostureCheckRow;
  policyRoles: PolicyRoleRow;
  policyMembers: PolicyMemberRow;
  configTypes: ConfigTypeRow;
  configs: ConfigRow;
  mfa: MfaRow;
  externalJwtSigners: ExternalJwtSignerRow;
  cas: CaRow;
  enrollments: EnrollmentRow;
  apiSessionCertificates: ApiSessionCertificateRow;
  entityRoleAttributes: EntityRoleAttributeRow;
  entityTags: EntityTagRow;
  identityTypes: IdentityTypeRow;
  authPolicies: AuthPolicyRow;
  identities: IdentityRow;
  authenticators: AuthenticatorRow;
  apiSessions: ApiSessionRow;
  oidcAuthRequests: OidcAuthRequestRow;
  apiTokens: ApiTokenRow;
  revocations: RevocationRow;
  auditEvents: AuditEventRow;
  importRuns: ImportRunRow;
  importJournal: ImportJournalRow;
}

/** An import applied in several transactions, until it finished or was undone (model/import-journal.ts). */
export interface ImportRunRow {
  id: string;
  pid: number;
  startedAt: string;
  /** Set by its last transaction: what it created stays; its notes are being forgotten. */
  finishedAt: string | null;
}

/** One entity an unfinished import created: `kind` is the document's key (identities, configs...). */
export interface ImportJournalRow {
  importId: string;
  seq: number;
  kind: string;
  entityId: string;
}

/** One stored event (model/events/audit-store.ts): the event's JSON in body, and what it is looked up by. */
export interface AuditEventRow {
  id: string;
  at: string;
  namespace: string;
  eventType: string;
  entityType: string | null;
  entityId: string | null;
  entityName: string | null;
  actorId: string | null;
  actorName: string | null;
  body: string;
}

/** The store as Kysely sees it, and one of its transactions (db.ts opens it; the store's helpers take these). */
export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
