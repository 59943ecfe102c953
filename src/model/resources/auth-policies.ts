import { Type, type TSchema } from 'typebox';
import type { Tx } from '../../store/db.js';
import type { Ctx } from '../context.js';
import { fromJson, isSet, sortedSet } from '../../store/json.js';
import { ApiError, cannotDelete, invalidField, referencedBy } from '../errors.js';
import { baseDetail, baseFilterable, defineResource, jsonField, type Row, type WriteMode } from '../resource.js';
import { baseFields, Name, Nullable, Tags } from '../schemas/common.js';

const Count = Type.Integer({ minimum: 0, maximum: 100_000 });
const shapes = {
  cert: { allowed: Type.Boolean(), allowExpiredCerts: Type.Boolean() },
  updb: {
    allowed: Type.Boolean(), minPasswordLength: Type.Integer({ minimum: 5, maximum: 100 }), requireSpecialChar: Type.Boolean(), requireNumberChar: Type.Boolean(),
    requireMixedCase: Type.Boolean(), maxAttempts: Count, lockoutDurationMinutes: Count,
  },
  extJwt: { allowed: Type.Boolean(), allowedSigners: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1000 }) },
};
const obj = (props: Record<string, TSchema>, partial: boolean) =>
  Type.Object(partial ? Object.fromEntries(Object.entries(props).map(([k, v]) => [k, Type.Optional(v)])) : props, { additionalProperties: false });
// Upstream's CLI sends `allowedSigners: null` in every PATCH it does not change them in: unchanged.
const extJwtPatch = { ...shapes.extJwt, allowedSigners: Nullable(shapes.extJwt.allowedSigners) };
const primary = (partial: boolean) => obj({ cert: obj(shapes.cert, partial), updb: obj(shapes.updb, partial), extJwt: obj(partial ? extJwtPatch : shapes.extJwt, partial) }, partial);
const secondary = (partial: boolean) => obj({ requireTotp: Type.Boolean(), requireExtJwtSigner: Type.Optional(Nullable(Type.String({ maxLength: 64 }))) }, partial);

export const authPolicyCreate = Type.Object({ name: Name, primary: primary(false), secondary: secondary(false), tags: Type.Optional(Tags) }, { additionalProperties: false });
export const authPolicyPatch = Type.Object(
  { name: Type.Optional(Nullable(Name)), primary: Type.Optional(primary(true)), secondary: Type.Optional(Nullable(secondary(true))), tags: Type.Optional(Tags) },
  { additionalProperties: false },
);
export const authPolicyDetail = Type.Object({ ...baseFields, name: Type.String(), primary: primary(false), secondary: Type.Object({ requireTotp: Type.Boolean(), requireExtJwtSigner: Nullable(Type.String()) }) });

export interface AuthPolicy {
  primary: { cert: { allowed: boolean; allowExpiredCerts: boolean }; updb: { allowed: boolean; minPasswordLength: number; requireSpecialChar: boolean; requireNumberChar: boolean; requireMixedCase: boolean; maxAttempts: number; lockoutDurationMinutes: number }; extJwt: { allowed: boolean; allowedSigners: string[] } };
  secondary: { requireTotp: boolean; requireExtJwtSigner: string | null };
}

/** Deep merge for patches: objects merge, everything else replaces. */
function merge(base: Row, patch: Row): Row {
  const out: Row = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    // A null list of signers is upstream's CLI saying nothing about them (see extJwtPatch).
    if (k === 'allowedSigners' && v === null) continue;
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && base[k] && typeof base[k] === 'object' ? merge(base[k], v) : v;
  }
  return out;
}

async function checkSigners(tx: Tx, p: Row) {
  const ids: string[] = [...(p.primary?.extJwt?.allowedSigners ?? []), ...(p.secondary?.requireExtJwtSigner ? [p.secondary.requireExtJwtSigner] : [])];
  for (const id of ids) {
    const s = await tx.selectFrom('externalJwtSigners').select('id').where('id', '=', id).executeTakeFirst();
    if (!s) throw invalidField('primary.extJwt.allowedSigners', `no external JWT signer has the id '${id}'`, id);
  }
}

async function toRow(input: Row, mode: WriteMode, tx: Tx, _ctx: unknown, existing?: Row): Promise<Row> {
  const out: Row = {};
  if (input.name != null) out.name = input.name;
  const current = existing ? { primary: fromJson(existing.primaryJson, {}), secondary: fromJson(existing.secondaryJson, {}) } : { primary: {}, secondary: {} };
  const next = mode === 'patch' ? merge(current, { ...(input.primary ? { primary: input.primary } : {}), ...(input.secondary ? { secondary: input.secondary } : {}) }) : { primary: input.primary, secondary: { requireExtJwtSigner: null, ...input.secondary } };
  await checkSigners(tx, next);
  if (mode !== 'patch' || input.primary) out.primaryJson = JSON.stringify(next.primary);
  if (mode !== 'patch' || input.secondary) out.secondaryJson = JSON.stringify(next.secondary);
  return out;
}

/** Allowed signers are a string set upstream: shown sorted, without repeats. */
function withSortedSigners(primary: { extJwt?: { allowedSigners?: unknown } }) {
  return primary.extJwt ? { ...primary, extJwt: { ...primary.extJwt, allowedSigners: sortedSet(primary.extJwt.allowedSigners ?? []) } } : primary;
}

export const authPolicies = defineResource({
  name: 'auth policy',
  plural: 'auth-policies',
  conflictsOn: ['delete'],
  table: 'authPolicies',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Auth policies: which primary methods (cert, updb, ext-jwt) and secondary factors an identity needs',
  schemas: { detail: authPolicyDetail, create: authPolicyCreate, update: authPolicyCreate, patch: authPolicyPatch },
  ignored: { id: Type.String({ maxLength: 255 }) },
  filterable: {
    ...baseFilterable,
    isSystem: { column: 'e.is_system', type: 'boolean', sortable: true },
    name: { column: 'e.name', type: 'string', sortable: true },
    // Upstream's symbols are paths into the policy; types follow the values (upstream swaps two of them by mistake).
    'primary.cert.allowed': jsonField('e.primary_json', ['cert', 'allowed'], 'boolean'),
    'primary.cert.allowExpiredCerts': jsonField('e.primary_json', ['cert', 'allowExpiredCerts'], 'boolean'),
    'primary.updb.allowed': jsonField('e.primary_json', ['updb', 'allowed'], 'boolean'),
    'primary.updb.minPasswordLength': jsonField('e.primary_json', ['updb', 'minPasswordLength'], 'number'),
    'primary.updb.requireSpecialChar': jsonField('e.primary_json', ['updb', 'requireSpecialChar'], 'boolean'),
    'primary.updb.requireNumberChar': jsonField('e.primary_json', ['updb', 'requireNumberChar'], 'boolean'),
    'primary.updb.requireMixedCase': jsonField('e.primary_json', ['updb', 'requireMixedCase'], 'boolean'),
    'primary.updb.maxAttempts': jsonField('e.primary_json', ['updb', 'maxAttempts'], 'number'),
    'primary.extJwt.allowed': jsonField('e.primary_json', ['extJwt', 'allowed'], 'boolean'),
    'secondary.requireTotp': jsonField('e.secondary_json', ['requireTotp'], 'boolean'),
    'secondary.requireExtJwtSigner': jsonField('e.secondary_json', ['requireExtJwtSigner'], 'string'),
  },
  toDetail: (r) => Object.assign(baseDetail('auth-policies', r), {
    name: r.name, primary: withSortedSigners(fromJson(r.primaryJson, {})), secondary: { requireExtJwtSigner: null, ...fromJson(r.secondaryJson, {}) },
  }),
  toRow,
  hooks: {
    beforeDelete: async (tx, existing) => {
      // As upstream: every referring identity is named (up to 100 here, so the answer stays small). Checked
      // first, so the default policy in use answers 409 as upstream's does.
      const users = await tx.selectFrom('identities').select('id').where('authPolicyId', '=', existing.id).orderBy('id').limit(100).execute();
      if (users.length) throw referencedBy('authPolicy', 'identity', users.map((u) => u.id), 'authPolicyId');
      // As upstream's foreign key: an external JWT signer enrolls identities into it (enrollAuthPolicyId).
      const signers = await tx.selectFrom('externalJwtSigners').select('id').where('enrollAuthPolicyId', '=', existing.id).orderBy('id').limit(100).execute();
      if (signers.length) throw referencedBy('authPolicy', 'externalJwtSigner', signers.map((s) => s.id), 'enrollAuthPolicyId');
      if (isSet(existing.isSystem)) throw cannotDelete('The default auth policy cannot be deleted; edit it instead');
    },
  },
  cli: { columns: ['id', 'name', 'primary.updb.allowed', 'primary.cert.allowed', 'primary.extJwt.allowed', 'secondary.requireTotp'] },
});

/** The policy that governs an identity. */
export async function policyOf(db: Tx | { selectFrom: Tx['selectFrom'] }, identityId: string): Promise<AuthPolicy> {
  const row = await (db as Tx)
    .selectFrom('identities as i')
    .innerJoin('authPolicies as p', 'p.id', 'i.authPolicyId')
    .select(['p.primaryJson', 'p.secondaryJson'])
    .where('i.id', '=', identityId)
    .executeTakeFirst();
  if (!row) throw new ApiError(404, 'NOT_FOUND', `The identity with id '${identityId}' was not found`);
  return { primary: fromJson(row.primaryJson, {} as AuthPolicy['primary']), secondary: { requireExtJwtSigner: null, requireTotp: false, ...fromJson<Partial<AuthPolicy['secondary']>>(row.secondaryJson, {}) } };
}

/**
 * The updb password rules of the identity's policy, when the controller enforces them
 * (config.enforcePasswordPolicy; upstream stores the rules without enforcing them, so off by default).
 * The message names every rule broken.
 */
export async function checkPasswordPolicy(ctx: Ctx, tx: Tx, identityId: string, password: string, field = 'password') {
  if (!ctx.config.enforcePasswordPolicy) return;
  const u = (await policyOf(tx, identityId)).primary.updb;
  if (!u) return;
  const broken: string[] = [];
  if (password.length < (u.minPasswordLength ?? 5)) broken.push(`at least ${u.minPasswordLength} characters`);
  if (u.requireNumberChar && !/[0-9]/.test(password)) broken.push('a digit');
  if (u.requireSpecialChar && !/[^A-Za-z0-9]/.test(password)) broken.push('a special character');
  if (u.requireMixedCase && !(/[a-z]/.test(password) && /[A-Z]/.test(password))) broken.push('upper and lower case letters');
  if (broken.length) throw invalidField(field, `the auth policy requires ${broken.join(', ')}`);
}
