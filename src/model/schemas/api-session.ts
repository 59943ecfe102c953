import { Type } from 'typebox';
import { baseFields, EntityRef } from './common.js';

const AuthQuery = Type.Object({
  typeId: Type.String(), provider: Type.String(), httpMethod: Type.Optional(Type.String()), httpUrl: Type.Optional(Type.String()),
  minLength: Type.Optional(Type.Integer()), maxLength: Type.Optional(Type.Integer()), format: Type.Optional(Type.String()),
  // 2.x (authQueryDetail): an EXT-JWT query names its signer, the client id and scopes to ask its provider with.
  id: Type.Optional(Type.String()), clientId: Type.Optional(Type.String()), scopes: Type.Optional(Type.Array(Type.String())), isTotpEnrolled: Type.Optional(Type.Boolean()),
});

export const apiSessionSchema = Type.Object({
  ...baseFields,
  token: Type.String(),
  identity: EntityRef,
  identityId: Type.String(),
  authenticatorId: Type.String(),
  ipAddress: Type.String(),
  configTypes: Type.Array(Type.String()),
  authQueries: Type.Array(AuthQuery),
  isMfaRequired: Type.Boolean(),
  isMfaComplete: Type.Boolean(),
  isCertExtendable: Type.Boolean(),
  // 2.x: an administrator asked for the certificate this session logged in with to be extended (and rekeyed).
  isCertExtendRequested: Type.Boolean(),
  isCertKeyRollRequested: Type.Boolean(),
  improperClientCertChain: Type.Boolean(),
  lastActivityAt: Type.String(),
  cachedLastActivityAt: Type.String(),
  cachedUpdatedAt: Type.String(),
  expiresAt: Type.String(),
  expirationSeconds: Type.Integer(),
});

