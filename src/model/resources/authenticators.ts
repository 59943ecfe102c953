import { X509Certificate } from 'node:crypto';
import { Type } from 'typebox';
import type { Tx } from '../../store/db.js';
import { isSet } from '../../store/json.js';
import { hashPassword } from '../auth/password.js';
import { endSessionsOf, KEEP_API_SESSION } from '../auth/revoke.js';
import { checkPasswordPolicy } from './auth-policies.js';
import { identityRef } from './identity-links.js';
import type { Ctx } from '../context.js';
import { ApiError, conflict, couldNotValidate, notFound } from '../errors.js';
import { fingerprintOf } from '../pki/certs.js';
import { aliases, baseDetail, baseFilterable, defineResource, type Row, type WriteMode } from '../resource.js';
import { baseFields, EntityRef, FreePassword, FreeUsername, Nullable, Password, Tags, Username } from '../schemas/common.js';

export const authenticatorCreate = Type.Object(
  {
    identityId: Type.String({ minLength: 1, maxLength: 64 }),
    method: Type.Union([Type.Literal('updb'), Type.Literal('cert')]),
    // The document gives create's username and password no length limits (replace and patch have them),
    // and upstream accepts any non-empty pair (bounded only as the index needs: MAX_USERNAME_CHARS).
    username: Type.Optional(FreeUsername),
    password: Type.Optional(FreePassword),
    certPem: Type.Optional(Type.String({ minLength: 1, maxLength: 65536 })),
    tags: Type.Optional(Tags),
  },
  { additionalProperties: false },
);
export const authenticatorUpdate = Type.Object({ username: Username, password: Password, tags: Type.Optional(Tags) }, { additionalProperties: false });
export const authenticatorPatch = Type.Object(
  { username: Type.Optional(Nullable(Username)), password: Type.Optional(Nullable(Password)), tags: Type.Optional(Tags) },
  { additionalProperties: false },
);
/** The calling identity changes its own password: the current one is required. */
export const ownAuthenticatorUpdate = Type.Object(
  { username: Username, password: Password, currentPassword: Password, tags: Type.Optional(Tags) },
  { additionalProperties: false },
);
export const ownAuthenticatorPatch = Type.Object(
  { username: Type.Optional(Nullable(Username)), password: Type.Optional(Nullable(Password)), currentPassword: Password, tags: Type.Optional(Tags) },
  { additionalProperties: false },
);

export const authenticatorDetail = Type.Object({
  ...baseFields,
  method: Type.String(),
  identityId: Type.String(),
  identity: EntityRef,
  username: Type.Optional(Type.String()),
  certPem: Type.Optional(Type.String()),
  fingerprint: Type.Optional(Type.String()),
  isIssuedByNetwork: Type.Boolean(),
  // 2.x: an extension asked for by an administrator (request-extend), until the SDK's extend-verify.
  isExtendRequested: Type.Boolean(),
  isKeyRollRequested: Type.Boolean(),
  extendRequestedAt: Type.Optional(Nullable(Type.String({ format: 'date-time' }))),
  lastExtendRolledKeys: Type.Boolean(),
  lastAuthResolvedToRoot: Type.Boolean(),
});

function parseCert(pem: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch {
    throw new ApiError(400, 'COULD_NOT_PARSE_BODY', 'certPem is not a PEM-encoded X.509 certificate', { field: 'certPem', reason: 'not a certificate', value: pem });
  }
}

async function prepare(input: Row, mode: WriteMode): Promise<Row> {
  if (mode === 'create') {
    if (input.method === 'updb') {
      if (input.certPem !== undefined) throw new ApiError(400, 'INVALID_AUTHENTICATOR_PROPERTIES', 'A updb authenticator takes username and password, not certPem');
      if (!input.username || !input.password) throw couldNotValidate(input.username ? 'password' : 'username', 'is required for method updb');
    } else {
      if (input.username !== undefined || input.password !== undefined) {
        throw new ApiError(400, 'INVALID_AUTHENTICATOR_PROPERTIES', 'A cert authenticator takes certPem, not username or password');
      }
      if (!input.certPem) throw couldNotValidate('certPem', 'is required for method cert');
      parseCert(input.certPem);
    }
  }
  return typeof input.password === 'string' ? { ...input, passwordHash: await hashPassword(input.password) } : input;
}

async function usernameFree(tx: Tx, username: string, self?: string) {
  const other = await tx.selectFrom('authenticators').select('id').where('username', '=', username).executeTakeFirst();
  if (other && other.id !== self) throw couldNotValidate('username', `'${username}' is already taken`, username);
}

async function toRow(input: Row, mode: WriteMode, tx: Tx, ctx: Ctx, existing?: Row): Promise<Row> {
  if (mode === 'create') {
    const identity = await tx.selectFrom('identities').select('id').where('id', '=', input.identityId).executeTakeFirst();
    // 404 as upstream (the identity named in the body is the resource not found), not a field error.
    if (!identity) throw notFound('identity', input.identityId);
    const same = await tx.selectFrom('authenticators').select('id').where('identityId', '=', input.identityId).where('method', '=', input.method).executeTakeFirst();
    if (same) throw conflict('MAX_AUTHENTICATOR_METHODS_REACHED', `The identity already has a ${input.method} authenticator`);
    if (input.method === 'updb') {
      await checkPasswordPolicy(ctx, tx, input.identityId, input.password);
      await usernameFree(tx, input.username);
      return { identityId: input.identityId, method: 'updb', username: input.username, passwordHash: input.passwordHash, isIssuedByNetwork: 0 };
    }
    const fingerprint = fingerprintOf(input.certPem);
    const inUse = await tx.selectFrom('authenticators').select('id').where('fingerprint', '=', fingerprint).executeTakeFirst();
    if (inUse) throw conflict('CERT_IN_USE', 'This certificate is already bound to an authenticator');
    const issued = parseCert(input.certPem).checkIssued(new X509Certificate(ctx.pki.intermediatePem));
    return { identityId: input.identityId, method: 'cert', certPem: input.certPem, fingerprint, isIssuedByNetwork: issued ? 1 : 0 };
  }
  if (existing?.method !== 'updb') {
    throw conflict('CANNOT_UPDATE_AUTHENTICATOR', 'Only updb (username/password) authenticators can be updated; replace a certificate by re-enrolling');
  }
  const out: Row = {};
  if (typeof input.username === 'string') {
    await usernameFree(tx, input.username, existing.id);
    out.username = input.username;
  }
  if (typeof input.passwordHash === 'string') {
    await checkPasswordPolicy(ctx, tx, existing.identityId, input.password);
    out.passwordHash = input.passwordHash;
  }
  return out;
}

export const authenticators = defineResource({
  name: 'authenticator',
  plural: 'authenticators',
  table: 'authenticators',
  conflictsOn: ['create', 'update'],
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Authenticators: the username/password or certificate an identity logs in with',
  schemas: { detail: authenticatorDetail, create: authenticatorCreate, update: authenticatorUpdate, patch: authenticatorPatch },
  filterable: {
    ...baseFilterable,
    method: { column: 'e.method', type: 'string', sortable: true },
    identity: { column: 'e.identity_id', type: 'string', sortable: true },
    certFingerprint: { column: 'e.fingerprint', type: 'string', sortable: true },
    certPem: { column: 'e.cert_pem', type: 'string', sortable: true },
    isIssuedByNetwork: { column: 'e.is_issued_by_network', type: 'boolean', sortable: true },
    isExtendRequested: { column: 'e.is_extend_requested', type: 'boolean', sortable: true },
    isKeyRollRequested: { column: 'e.is_key_roll_requested', type: 'boolean', sortable: true },
    extendRequestedAt: { column: 'e.extend_requested_at', type: 'datetime', sortable: true },
    lastExtendRolledKeys: { column: 'e.last_extend_rolled_keys', type: 'boolean', sortable: true },
    lastAuthResolvedToRoot: { column: 'e.last_auth_resolved_to_root', type: 'boolean', sortable: true },
    updbUsername: { column: 'e.username', type: 'string', sortable: true },
    // Upstream also lists updbPassword and updbSalt; password hashes are not made searchable here.
    ...aliases({
      identityId: { column: 'e.identity_id', type: 'string', sortable: true },
      username: { column: 'e.username', type: 'string', sortable: true },
      fingerprint: { column: 'e.fingerprint', type: 'string', sortable: true },
    }),
  },
  detailQuery: (db) =>
    db
      .selectFrom('authenticators as e')
      .innerJoin('identities as i', 'i.id', 'e.identityId')
      .selectAll('e')
      .select('i.name as identityName') as never,
  toDetail: (r) => Object.assign(baseDetail('authenticators', r), {
    method: r.method,
    identityId: r.identityId,
    identity: identityRef(r.identityId, r.identityName),
    ...(r.method === 'updb' ? { username: r.username ?? '' } : { certPem: r.certPem ?? '', fingerprint: r.fingerprint ?? '' }),
    isIssuedByNetwork: isSet(r.isIssuedByNetwork),
    isExtendRequested: isSet(r.isExtendRequested),
    isKeyRollRequested: isSet(r.isKeyRollRequested),
    // Absent until an extension was asked for, as upstream (omitempty there).
    ...(r.extendRequestedAt ? { extendRequestedAt: r.extendRequestedAt } : {}),
    lastExtendRolledKeys: isSet(r.lastExtendRolledKeys),
    lastAuthResolvedToRoot: isSet(r.lastAuthResolvedToRoot),
  }),
  toRow,
  hooks: {
    prepare,
    // A new password ends the sessions the old one opened (but the caller's own, when it is the owner).
    afterWrite: async (tx, id, ctx, input, mode) => {
      if (mode !== 'create' && typeof input.passwordHash === 'string') await endSessionsOf(tx, ctx, id, input[KEEP_API_SESSION as never]);
    },
    beforeDelete: async (tx, existing, ctx) => {
      await endSessionsOf(tx, ctx, existing.id);
    },
  },
  cli: { columns: ['id', 'method', 'identity.name', 'username', 'fingerprint'] },
});
