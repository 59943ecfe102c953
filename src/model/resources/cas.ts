import { X509Certificate } from 'node:crypto';
import { Type } from 'typebox';
import type { Tx } from '../../store/db.js';
import { bit, fromJson, isSet, toJson, sortedStrings } from '../../store/json.js';
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';
import { writeTx } from '../crud.js';
import { recordRowChange } from '../events/record.js';
import { newId } from '../ids.js';
import { fingerprintOf } from '../pki/certs.js';
import { baseDetail, baseFilterable, defineResource, type Row, type WriteMode } from '../resource.js';
import { baseFields, Name, Nullable, Tags } from '../schemas/common.js';
import { checkClaimRules, ClaimRules } from '../pki/claim-attributes.js';

/**
 * The common name a verification certificate must carry: short as upstream's (a 9-character id there;
 * `ziti edge list cas` shows it in a column, and a UUID wraps), not a secret (it proves nothing alone:
 * the certificate must also be signed by the CA's key).
 */
const verificationToken = () => newId(10);

export const DEFAULT_IDENTITY_NAME_FORMAT = '[caName]-[commonName]';

const Roles = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 1000 });
const ExternalIdClaim = Type.Object(
  {
    location: Nullable(Type.Union(['COMMON_NAME', 'SAN_URI', 'SAN_EMAIL'].map((v) => Type.Literal(v)))),
    matcher: Nullable(Type.Union(['ALL', 'PREFIX', 'SUFFIX', 'SCHEME'].map((v) => Type.Literal(v)))),
    matcherCriteria: Nullable(Type.String({ maxLength: 1024 })),
    parser: Nullable(Type.Union(['NONE', 'SPLIT'].map((v) => Type.Literal(v)))),
    parserCriteria: Nullable(Type.String({ maxLength: 1024 })),
    index: Nullable(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
const Format = Type.String({ maxLength: 255 });
const flags = { isAutoCaEnrollmentEnabled: Type.Boolean(), isOttCaEnrollmentEnabled: Type.Boolean(), isAuthEnabled: Type.Boolean() };
/**
 * ztc's fields (not upstream's), optional everywhere so upstream's clients never send them: routers that
 * enroll themselves (ziti#1390). A PUT that leaves them out keeps them.
 */
const routerEnrollmentFlag = Type.Boolean({ description: "ztc's: a router presenting a certificate this (verified) CA issued on the control channel is created as an edge router and enrolled, named by the certificate's common name" });
const edgeRouterRoles = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 1000, description: "ztc's: the role attributes of edge routers enrolled through this CA" });
const routerEnrollment = { isEdgeRouterEnrollmentEnabled: Type.Optional(routerEnrollmentFlag), edgeRouterRoles: Type.Optional(edgeRouterRoles), roleAttributeClaims: Type.Optional(ClaimRules) };
const routerEnrollmentPatch = { isEdgeRouterEnrollmentEnabled: Type.Optional(Nullable(routerEnrollmentFlag)), edgeRouterRoles: Type.Optional(Nullable(edgeRouterRoles)), roleAttributeClaims: Type.Optional(Nullable(ClaimRules)) };

export const caCreate = Type.Object(
  { name: Name, certPem: Type.String({ minLength: 1, maxLength: 65536 }), identityRoles: Roles, identityNameFormat: Type.Optional(Format), externalIdClaim: Type.Optional(Nullable(ExternalIdClaim)), tags: Type.Optional(Tags), ...flags, ...routerEnrollment },
  { additionalProperties: false },
);
export const caUpdate = Type.Object(
  { name: Name, identityRoles: Roles, identityNameFormat: Format, externalIdClaim: Type.Optional(Nullable(ExternalIdClaim)), tags: Type.Optional(Tags), ...flags, ...routerEnrollment },
  { additionalProperties: false },
);
/** Upstream's patch type of the claim has no required field: `ziti edge update ca` always sends `{}`. */
const ExternalIdClaimPatch = Type.Partial(ExternalIdClaim);

export const caPatch = Type.Object(
  {
    name: Type.Optional(Nullable(Name)), identityRoles: Type.Optional(Nullable(Roles)), identityNameFormat: Type.Optional(Nullable(Format)),
    externalIdClaim: Type.Optional(Nullable(ExternalIdClaimPatch)), tags: Type.Optional(Tags),
    isAutoCaEnrollmentEnabled: Type.Optional(Nullable(Type.Boolean())), isOttCaEnrollmentEnabled: Type.Optional(Nullable(Type.Boolean())), isAuthEnabled: Type.Optional(Nullable(Type.Boolean())),
    ...routerEnrollmentPatch,
  },
  { additionalProperties: false },
);
export const caDetail = Type.Object({
  ...baseFields, name: Type.String(), certPem: Type.String(), fingerprint: Type.String(), isVerified: Type.Boolean(), verificationToken: Type.Optional(Type.String()),
  identityRoles: Type.Array(Type.String()), identityNameFormat: Type.String(), externalIdClaim: Type.Optional(Type.Unsafe({ type: 'object', additionalProperties: true })),
  isAutoCaEnrollmentEnabled: Type.Boolean(), isOttCaEnrollmentEnabled: Type.Boolean(), isAuthEnabled: Type.Boolean(),
  isEdgeRouterEnrollmentEnabled: Type.Boolean(), edgeRouterRoles: Type.Array(Type.String()), roleAttributeClaims: ClaimRules,
});

/** A CA certificate: parses, and is marked as a CA. */
export function parseCaCert(pem: string): X509Certificate {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch {
    throw new ApiError(400, 'COULD_NOT_PARSE_BODY', 'certPem is not a PEM-encoded X.509 certificate', { field: 'certPem', reason: 'not a certificate', value: pem });
  }
  if (!cert.ca) throw new ApiError(400, 'CERTIFICATE_IS_NOT_CA', 'certPem is not a CA certificate (its basic constraints do not say CA:TRUE)', { field: 'certPem', reason: 'not a CA', value: pem });
  return cert;
}

async function toRow(input: Row, mode: WriteMode, tx: Tx): Promise<Row> {
  const out: Row = {};
  const set = (k: string, v: unknown) => {
    if (mode !== 'patch' || (k in input && input[k] !== null)) out[k] = v;
  };
  if (mode === 'create') {
    parseCaCert(input.certPem);
    const fingerprint = fingerprintOf(input.certPem);
    const dup = await tx.selectFrom('cas').select('id').where('fingerprint', '=', fingerprint).executeTakeFirst();
    // 400 as upstream (the document allows only 400 here; go-swagger clients cannot read a 409).
    if (dup) throw new ApiError(400, 'COULD_NOT_VALIDATE', `certPem: this certificate is already the CA '${dup.id}'`, { field: 'certPem', reason: `already the CA '${dup.id}'`, value: input.certPem });
    Object.assign(out, { certPem: input.certPem, fingerprint, verificationToken: verificationToken(), isVerified: 0 });
  }
  set('name', input.name);
  set('identityRoles', toJson(input.identityRoles ?? [], []));
  set('identityNameFormat', input.identityNameFormat ?? DEFAULT_IDENTITY_NAME_FORMAT);
  if (mode !== 'patch' || 'externalIdClaim' in input) out.externalIdClaim = input.externalIdClaim ? JSON.stringify(input.externalIdClaim) : null;
  for (const f of ['isAutoCaEnrollmentEnabled', 'isOttCaEnrollmentEnabled', 'isAuthEnabled']) set(f, bit(input[f]));
  // ztc's own fields: left as they are unless given (upstream's PUT does not know them), defaults on create.
  const own = (k: string, v: (x: unknown) => unknown, dflt: unknown) => {
    if (input[k] != null) out[k] = v(input[k]);
    else if (mode === 'create') out[k] = dflt;
  };
  own('isEdgeRouterEnrollmentEnabled', (x) => bit(x as boolean), 0);
  own('edgeRouterRoles', (x) => toJson(x, []), '[]');
  if (Array.isArray(input.roleAttributeClaims)) checkClaimRules(input.roleAttributeClaims);
  own('roleAttributeClaims', (x) => toJson(x, []), '[]');
  return out;
}

export const cas = defineResource({
  name: 'ca',
  plural: 'cas',
  table: 'cas',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Third-party certificate authorities whose certificates may enroll and authenticate (after verification)',
  schemas: { detail: caDetail, create: caCreate, update: caUpdate, patch: caPatch },
  blankAsNull: ['identityNameFormat'],
  // ZAC's edit form sends the whole CA back; upstream's update and patch lack id and certPem (a CA keeps its certificate).
  ignored: { id: Type.String({ maxLength: 255 }), certPem: Type.String({ maxLength: 65536 }) },
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true },
    fingerprint: { column: 'e.fingerprint', type: 'string', sortable: true },
    isVerified: { column: 'e.is_verified', type: 'boolean', sortable: true },
    isAuthEnabled: { column: 'e.is_auth_enabled', type: 'boolean', sortable: true },
    isAutoCaEnrollmentEnabled: { column: 'e.is_auto_ca_enrollment_enabled', type: 'boolean', sortable: true },
    isOttCaEnrollmentEnabled: { column: 'e.is_ott_ca_enrollment_enabled', type: 'boolean', sortable: true },
    verificationToken: { column: 'e.verification_token', type: 'string', sortable: true },
    isEdgeRouterEnrollmentEnabled: { column: 'e.is_edge_router_enrollment_enabled', type: 'boolean', sortable: true },
  },
  // The verify link only while there is something to verify; the token stays, as upstream keeps it:
  // its CLI reads it before asking (and panics without it) even when the CA is verified already.
  toDetail: (r) => Object.assign(baseDetail('cas', r, { ...(isSet(r.isVerified) ? {} : { verify: { href: `./cas/${r.id}/verify`, method: 'POST' } }), jwt: { href: `./cas/${r.id}/jwt` } }), {
    name: r.name, certPem: r.certPem, fingerprint: r.fingerprint, isVerified: isSet(r.isVerified),
    verificationToken: r.verificationToken,
    identityRoles: sortedStrings(r.identityRoles), identityNameFormat: r.identityNameFormat,
    // Absent rather than null when unset, as upstream (its definition is not nullable).
    ...(r.externalIdClaim ? { externalIdClaim: fromJson(r.externalIdClaim, {}) } : {}),
    isAutoCaEnrollmentEnabled: isSet(r.isAutoCaEnrollmentEnabled), isOttCaEnrollmentEnabled: isSet(r.isOttCaEnrollmentEnabled), isAuthEnabled: isSet(r.isAuthEnabled),
    isEdgeRouterEnrollmentEnabled: isSet(r.isEdgeRouterEnrollmentEnabled), edgeRouterRoles: sortedStrings(r.edgeRouterRoles),
    roleAttributeClaims: fromJson(r.roleAttributeClaims, []),
  }),
  toRow,
  cli: { columns: ['id', 'name', 'isVerified', 'isAuthEnabled', 'isAutoCaEnrollmentEnabled', 'isOttCaEnrollmentEnabled', 'fingerprint'] },
});

/** POST /cas/{id}/verify: a certificate signed by the CA whose common name is the verification token. */
export async function verifyCa(ctx: Ctx, id: string, pem: unknown) {
  const ca = await ctx.store.db.selectFrom('cas').selectAll().where('id', '=', id).executeTakeFirst();
  if (!ca) throw new ApiError(404, 'NOT_FOUND', `The ca with id '${id}' was not found`);
  if (isSet(ca.isVerified)) throw new ApiError(409, 'CA_ALREADY_VERIFIED', 'This CA is already verified');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(String(pem ?? ''));
  } catch {
    throw new ApiError(400, 'COULD_NOT_PARSE_BODY', 'The body must be a PEM certificate (Content-Type text/plain) signed by the CA');
  }
  const anchor = new X509Certificate(ca.certPem);
  if (!cert.checkIssued(anchor) || !cert.verify(anchor.publicKey)) {
    throw new ApiError(400, 'CERT_FAILED_VALIDATION', 'The verification certificate is not signed by this CA');
  }
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1];
  if (cn !== ca.verificationToken) {
    throw new ApiError(400, 'INVALID_COMMON_NAME', `The verification certificate's common name must be the CA's verificationToken, got '${cn ?? ''}'`);
  }
  await writeTx(ctx, async (tx) => {
    const changed = { isVerified: 1, updatedAt: ctx.clock.now().toISOString() };
    const res = await tx.updateTable('cas').set(changed).where('id', '=', id).where('isVerified', '=', 0).executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) throw new ApiError(409, 'CA_ALREADY_VERIFIED', 'This CA is already verified');
    await recordRowChange(tx, ctx, 'cas', 'updated', id, ca as never, { ...ca, ...changed }, 'verify');
  });
}
