import { X509Certificate } from 'node:crypto';
import net from 'node:net';
import { Type } from 'typebox';
import type { Tx } from '../../store/db.js';
import { bit, fromJson, isSet, sortedSet, toJson } from '../../store/json.js';
import { isInternalAddress } from '../auth/jwks-fetch.js';
import { endSessionsOf } from '../auth/revoke.js';
import type { Ctx } from '../context.js';
import { ApiError, couldNotValidate, invalidField, referencedBy } from '../errors.js';
import { fingerprintOf } from '../pki/certs.js';
import { baseDetail, baseFilterable, defineResource, type Row, type WriteMode } from '../resource.js';
import { baseFields, Name, Nullable, Tags } from '../schemas/common.js';

const Url = Type.String({ maxLength: 2048 });
const Text = Type.String({ maxLength: 2048 });
/** Which of the provider's tokens a client presents to log in: the access token (upstream's default) or the ID token. */
const TargetToken = Type.Union([Type.Literal('ACCESS'), Type.Literal('ID')], { description: "The provider's token a client presents: ACCESS (the default) or ID" });
/** A claim by root property name (`groups`) or JSON pointer (`/realm_access/roles`), as upstream takes it. */
const ClaimsSelector = Type.String({ maxLength: 1024 });
const fields = {
  certPem: Type.Optional(Nullable(Type.String({ maxLength: 65536 }))),
  jwksEndpoint: Type.Optional(Nullable(Url)),
  kid: Type.Optional(Nullable(Text)),
  claimsProperty: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  useExternalId: Type.Optional(Nullable(Type.Boolean())),
  clientId: Type.Optional(Nullable(Text)),
  externalAuthUrl: Type.Optional(Nullable(Url)),
  scopes: Type.Optional(Nullable(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 100 }))),
  targetToken: Type.Optional(Nullable(TargetToken)),
  enrollNameClaimsSelector: Type.Optional(Nullable(ClaimsSelector)),
  enrollAttributeClaimsSelector: Type.Optional(Nullable(ClaimsSelector)),
  // Enrolment by the signer's JWT (POST /enroll/token): to a certificate (with a CSR) or to logging in with its JWTs.
  enrollToCertEnabled: Type.Optional(Nullable(Type.Boolean({ description: 'Its JWTs may enroll new identities that get a certificate (POST /enroll/token with a CSR)' }))),
  enrollToTokenEnabled: Type.Optional(Nullable(Type.Boolean({ description: 'Its JWTs may enroll new identities that then log in with its JWTs (POST /enroll/token without a CSR)' }))),
  enrollAuthPolicyId: Type.Optional(Nullable(Type.String({ maxLength: 64, description: 'The auth policy of the identities it enrolls (default: the default policy)' }))),
  tags: Type.Optional(Tags),
};
export const signerCreate = Type.Object(
  { name: Name, enabled: Type.Boolean(), issuer: Type.String({ minLength: 1, maxLength: 2048 }), audience: Nullable(Text), ...fields },
  { additionalProperties: false },
);
export const signerPatch = Type.Object(
  { name: Type.Optional(Name), enabled: Type.Optional(Type.Boolean()), issuer: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })), audience: Type.Optional(Nullable(Text)), ...fields },
  { additionalProperties: false },
);
// Upstream's detail fields are pointers: unset ones are null, never "" (its CLI reads a "" jwksEndpoint
// as a JWKS signer). commonName is a plain string there ("" without a certificate), and the validity
// dates of a JWKS signer are Go's zero time.
const OptionalText = Nullable(Type.String());
/** Upstream keeps scopes as a set and reads an empty one back as null, whether none or [] was sent. */
const Scopes = Nullable(Type.Array(Type.String()));
const scopesOf = (raw: unknown) => {
  const list = sortedSet(fromJson<string[]>(raw as string | null, []));
  return list.length ? list : null;
};
export const signerDetail = Type.Object({
  ...baseFields, name: Type.String(), enabled: Type.Boolean(), issuer: Type.String(), audience: OptionalText, certPem: OptionalText, jwksEndpoint: OptionalText,
  kid: OptionalText, claimsProperty: OptionalText, useExternalId: Type.Boolean(), clientId: OptionalText, externalAuthUrl: OptionalText, scopes: Scopes,
  fingerprint: OptionalText, commonName: Type.String(), notBefore: Type.String(), notAfter: Type.String(),
  targetToken: Type.String(), enrollNameClaimsSelector: Type.String(), enrollAttributeClaimsSelector: Type.String(), enrollToCertEnabled: Type.Boolean(), enrollToTokenEnabled: Type.Boolean(),
  enrollAuthPolicyId: Type.String(),
});
/**
 * What the client API shows: enough to start a login with the external provider. clientId is left out
 * when unset, as upstream's (omitempty there, where the management API shows null).
 */
export const signerClientDetail = Type.Object({
  ...baseFields, name: Type.String(), clientId: Type.Optional(Type.String()), externalAuthUrl: OptionalText, scopes: Scopes,
  audience: OptionalText, targetToken: Type.String(), enrollToCertEnabled: Type.Boolean(), enrollToTokenEnabled: Type.Boolean(),
});

/** Go's zero time as upstream's DateTime prints it: what a signer without a certificate shows for its validity. */
const GO_ZERO_TIME = '0001-01-01T00:00:00.000Z';

function checkUrl(field: string, value: string) {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    // Upstream's document check: COULD_NOT_VALIDATE in its words.
    throw couldNotValidate(field, `${field} in body must be of type uri: ${JSON.stringify(value)}`, value);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw couldNotValidate(field, 'must be an http or https URL', value);
}

/**
 * A JWKS endpoint written as an internal address (or localhost) is refused when the signer is saved, so
 * the operator hears why at once; names are resolved (and checked again) only when the keys are fetched,
 * outside any transaction.
 */
function checkJwksHost(value: string, ctx: Ctx) {
  const host = new URL(value).hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const internal = host === 'localhost' || host.endsWith('.localhost') || (net.isIP(host) !== 0 && isInternalAddress(host));
  if (internal && !ctx.config.jwksPrivateHosts.some((h) => h.toLowerCase().replace(/^\[|\]$/g, '') === host)) {
    throw new ApiError(400, 'INVALID_FIELD', `jwksEndpoint names ${host}, an internal address the controller does not fetch from unless the host is listed in jwksPrivateHosts (--jwks-private-hosts)`, { field: 'jwksEndpoint', reason: 'internal address', value });
  }
}

/** Fields upstream's CLI sends as null in every `update ext-jwt-signer` it leaves them out of: kept, as upstream keeps them. */
const KEPT_ON_NULL = new Set(['scopes', 'clientId']);

async function toRow(input: Row, mode: WriteMode, tx: Tx, ctx: Ctx, existing?: Row): Promise<Row> {
  const out: Row = {};
  const has = (k: string) => mode !== 'patch' || (k in input && !(input[k] === null && KEPT_ON_NULL.has(k)));
  // One signer per issuer, as upstream's unique index: a JWT's iss picks the signer that verifies it.
  // Checked in the write's transaction (no index: databases from before may hold duplicates, and a
  // write that leaves the issuer alone still goes through).
  if (has('issuer') && typeof input.issuer === 'string') {
    let q = tx.selectFrom('externalJwtSigners').select('id').where('issuer', '=', input.issuer);
    if (existing) q = q.where('id', '!=', existing.id as string);
    const other = await q.executeTakeFirst();
    if (other) throw couldNotValidate('issuer', `must be unique: an external JWT signer with issuer '${input.issuer}' already exists (id ${other.id})`, input.issuer);
  }
  for (const k of ['name', 'issuer', 'audience', 'jwksEndpoint', 'kid', 'clientId', 'externalAuthUrl']) if (has(k)) out[k] = input[k] ?? null;
  if (has('enabled')) out.enabled = bit(input.enabled);
  if (has('useExternalId')) out.useExternalId = bit(input.useExternalId);
  if (has('claimsProperty')) out.claimsProperty = input.claimsProperty ?? 'sub';
  if (has('scopes')) out.scopes = toJson(input.scopes ?? [], []);
  // Unset or null is upstream's default: ACCESS, /sub (the JWT's subject names the identity), no attributes.
  if (has('targetToken')) out.targetToken = input.targetToken ?? 'ACCESS';
  if (has('enrollNameClaimsSelector')) out.enrollNameClaimsSelector = claimsSelector('enrollNameClaimsSelector', input.enrollNameClaimsSelector) || '/sub';
  if (has('enrollAttributeClaimsSelector')) out.enrollAttributeClaimsSelector = claimsSelector('enrollAttributeClaimsSelector', input.enrollAttributeClaimsSelector);
  if (has('enrollToCertEnabled')) out.enrollToCertEnabled = bit(input.enrollToCertEnabled);
  if (has('enrollToTokenEnabled')) out.enrollToTokenEnabled = bit(input.enrollToTokenEnabled);
  if (has('enrollAuthPolicyId')) {
    const policy = input.enrollAuthPolicyId || null;
    if (policy && !(await tx.selectFrom('authPolicies').select('id').where('id', '=', policy).executeTakeFirst())) throw invalidField('enrollAuthPolicyId', `no auth policy has the id '${policy}'`, policy);
    out.enrollAuthPolicyId = policy;
  }
  if (input.jwksEndpoint) {
    checkUrl('jwksEndpoint', input.jwksEndpoint);
    checkJwksHost(input.jwksEndpoint, ctx);
  }
  if (input.externalAuthUrl) checkUrl('externalAuthUrl', input.externalAuthUrl);
  if (has('certPem')) {
    out.certPem = input.certPem ?? null;
    Object.assign(out, { fingerprint: null, commonName: null, notBefore: null, notAfter: null });
    if (input.certPem) {
      let x: X509Certificate;
      // Exactly one certificate, or upstream's INVALID_CERT_PEM (no cause there).
      const invalidPem = () => new ApiError(400, 'INVALID_CERT_PEM', 'the supplied certificate PEM is either invalid or contains the incorrect number of certificates');
      if ((input.certPem.match(/-----BEGIN CERTIFICATE-----/g) ?? []).length !== 1) throw invalidPem();
      try {
        x = new X509Certificate(input.certPem);
      } catch {
        throw invalidPem();
      }
      Object.assign(out, { fingerprint: fingerprintOf(input.certPem), commonName: /(?:^|\n)CN=([^\n]*)/.exec(x.subject)?.[1] ?? '', notBefore: new Date(x.validFrom).toISOString(), notAfter: new Date(x.validTo).toISOString() });
    }
  }
  const cert = 'certPem' in out ? out.certPem : existing?.certPem;
  const jwks = 'jwksEndpoint' in out ? out.jwksEndpoint : existing?.jwksEndpoint;
  if (!cert === !jwks) throw new ApiError(400, 'INVALID_FIELD', 'Give exactly one of certPem and jwksEndpoint: the key that verifies this signer\'s JWTs', { field: 'certPem', reason: 'exactly one of certPem, jwksEndpoint', value: cert });
  return out;
}

/**
 * A claims selector as upstream checks it: a root property name or a JSON pointer, kept as given; a `~`
 * must start an escape (`~0`, `~1`). Unset is "".
 */
function claimsSelector(field: string, value: unknown): string {
  const s = typeof value === 'string' ? value : '';
  if (/~(?![01])/.test(s)) throw couldNotValidate(field, `the claims selector is invalid: '~' must be followed by 0 or 1 in a JSON pointer`, s);
  return s;
}

/** Unset is null, and so is "" (rows written before blanks were stored as null). */
const opt = (v: unknown) => (v == null || v === '' ? null : String(v));

export const externalJwtSigners = defineResource({
  name: 'external jwt signer',
  plural: 'external-jwt-signers',
  conflictsOn: ['delete'],
  table: 'externalJwtSigners',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'External JWT signers: identity providers whose JWTs may log identities in (method ext-jwt)',
  schemas: { detail: signerDetail, create: signerCreate, update: signerCreate, patch: signerPatch },
  blankAsNull: ['audience', 'certPem', 'jwksEndpoint', 'kid', 'claimsProperty', 'clientId', 'externalAuthUrl', 'enrollAuthPolicyId'],
  filterable: {
    ...baseFilterable,
    ...Object.fromEntries(
      ['name', 'fingerprint', 'kid', 'issuer', 'certPem', 'commonName', 'claimsProperty', 'audience', 'clientId', 'scopes', 'targetToken', 'enrollNameClaimsSelector', 'enrollAttributeClaimsSelector'].map((f) => [f, { column: `e.${f.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())}`, type: 'string' as const, sortable: true }]),
    ),
    notAfter: { column: 'e.not_after', type: 'datetime', sortable: true },
    notBefore: { column: 'e.not_before', type: 'datetime', sortable: true },
    enabled: { column: 'e.enabled', type: 'boolean', sortable: true },
    useExternalId: { column: 'e.use_external_id', type: 'boolean', sortable: true },
    enrollToCertEnabled: { column: 'e.enroll_to_cert_enabled', type: 'boolean', sortable: true },
    enrollToTokenEnabled: { column: 'e.enroll_to_token_enabled', type: 'boolean', sortable: true },
    enrollAuthPolicyId: { column: 'e.enroll_auth_policy_id', type: 'string', sortable: true },
  },
  toDetail: (r) => Object.assign(baseDetail('external-jwt-signers', r), {
    name: r.name, enabled: isSet(r.enabled), issuer: r.issuer, audience: opt(r.audience), certPem: opt(r.certPem), jwksEndpoint: opt(r.jwksEndpoint), kid: opt(r.kid),
    claimsProperty: opt(r.claimsProperty), useExternalId: isSet(r.useExternalId), clientId: opt(r.clientId), externalAuthUrl: opt(r.externalAuthUrl), scopes: scopesOf(r.scopes),
    fingerprint: opt(r.fingerprint), commonName: r.commonName ?? '', notBefore: r.notBefore || GO_ZERO_TIME, notAfter: r.notAfter || GO_ZERO_TIME,
    targetToken: r.targetToken || 'ACCESS', enrollNameClaimsSelector: r.enrollNameClaimsSelector || '/sub', enrollAttributeClaimsSelector: r.enrollAttributeClaimsSelector ?? '',
    enrollToCertEnabled: isSet(r.enrollToCertEnabled), enrollToTokenEnabled: isSet(r.enrollToTokenEnabled), enrollAuthPolicyId: r.enrollAuthPolicyId ?? '',
  }),
  toRow,
  hooks: {
    beforeDelete: async (tx, existing, ctx) => {
      // Refused as upstream refuses it (409 and the referring policies), allowed signers checked first as there.
      const policies = await tx.selectFrom('authPolicies').select(['id', 'primaryJson', 'secondaryJson']).orderBy('id').execute();
      const allowing = policies.filter((p) => (fromJson<{ extJwt?: { allowedSigners?: string[] } }>(p.primaryJson, {}).extJwt?.allowedSigners ?? []).includes(existing.id));
      if (allowing.length) throw referencedBy('externalJwtSigners', 'authPolicies', allowing.slice(0, 100).map((p) => p.id), 'primary.extJwt.allowedSigners');
      const requiring = policies.filter((p) => fromJson<{ requireExtJwtSigner?: string | null }>(p.secondaryJson, {}).requireExtJwtSigner === existing.id);
      if (requiring.length) throw referencedBy('externalJwtSigner', 'authPolicy', requiring.slice(0, 100).map((p) => p.id), 'secondary.requireExtJwtSigner');
      await endSessionsOf(tx, ctx, existing.id);
    },
  },
  cli: { columns: ['id', 'name', 'enabled', 'issuer', 'audience', 'jwksEndpoint'] },
});
