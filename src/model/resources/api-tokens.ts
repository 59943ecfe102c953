// API tokens for automation: a long-lived bearer token that acts as an admin identity (in full, or
// read-only), for CI jobs and scrapers that cannot keep a password session alive. Shown once when
// created, stored as a hash, listed with expiry and last use, revoked by deleting it (by name in the CLI).
import { Type } from 'typebox';
import { iso } from '../clock.js';
import { invalidField } from '../errors.js';
import { hashSecret, newSecret } from '../ids.js';
import { ADMIN_READONLY, hasPermission } from '../permissions.js';
import { aliases, baseDetail, baseFilterable, defineResource, entityRef, type Row } from '../resource.js';
import { baseFields, EntityRef, Links, Name, Nullable, Tags } from '../schemas/common.js';
import { bit, isSet } from '../../store/json.js';

/** Marks a bearer value as an API token (not an API session's), so it is looked up in its own table. */
export const API_TOKEN_PREFIX = 'ztt_';
export const DEFAULT_TOKEN_DAYS = 90;
const MAX_TOKEN_DAYS = 3650;

export const apiTokenCreate = Type.Object(
  {
    name: Name,
    identityId: Type.Optional(Type.String({ maxLength: 64, description: 'The admin identity the token acts as (default: the caller)' })),
    readOnly: Type.Optional(Type.Boolean({ description: 'Read only, whatever the identity may do (default false)' })),
    expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TOKEN_DAYS, description: `Days until it stops working (default ${DEFAULT_TOKEN_DAYS})` })),
    tags: Type.Optional(Tags),
  },
  { additionalProperties: false },
);

export const apiTokenDetail = Type.Object({
  ...baseFields,
  name: Type.String(),
  identity: EntityRef,
  identityId: Type.String(),
  readOnly: Type.Boolean(),
  expiresAt: Type.String(),
  lastUsedAt: Nullable(Type.String()),
});

/** What a create answers: the token itself, this once. */
export const apiTokenCreated = Type.Object({ id: Type.String(), _links: Links, name: Type.String(), token: Type.String(), expiresAt: Type.String(), readOnly: Type.Boolean() });

export const apiTokens = defineResource({
  name: 'api token',
  plural: 'api-tokens',
  table: 'apiTokens',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'delete'],
  description: 'API tokens: long-lived, revocable bearer tokens that act as an admin (or read-only) for automation',
  schemas: { detail: apiTokenDetail, create: apiTokenCreate },
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true },
    identity: { column: 'e.identity_id', type: 'string', sortable: true },
    readOnly: { column: 'e.read_only', type: 'boolean', sortable: true },
    expiresAt: { column: 'e.expires_at', type: 'datetime', sortable: true },
    lastUsedAt: { column: 'e.last_used_at', type: 'datetime', sortable: true },
    ...aliases({ identityId: { column: 'e.identity_id', type: 'string', sortable: true } }),
  },
  detailQuery: (db) => db.selectFrom('apiTokens as e').innerJoin('identities as i', 'i.id', 'e.identityId').selectAll('e').select('i.name as identityName') as never,
  toDetail: (r) => Object.assign(baseDetail('api-tokens', r), {
    name: r.name,
    identity: entityRef('identities', r.identityId, r.identityName),
    identityId: r.identityId,
    readOnly: isSet(r.readOnly),
    expiresAt: r.expiresAt ?? '',
    lastUsedAt: r.lastUsedAt ?? null,
  }),
  toRow: async (input, _mode, tx) => {
    const identity = await tx.selectFrom('identities').select(['isAdmin', 'permissions']).where('id', '=', String(input.identityId)).executeTakeFirst();
    if (!identity) throw invalidField('identityId', `no identity has the id '${input.identityId}'`, input.identityId);
    if (!isSet(identity.isAdmin) && !hasPermission(identity.permissions, ADMIN_READONLY)) {
      throw invalidField('identityId', `tokens are for admins: the identity is neither an admin nor has the ${ADMIN_READONLY} permission`, input.identityId);
    }
    return { name: input.name, identityId: input.identityId, readOnly: bit(input.readOnly), tokenHash: hashSecret(input.token), expiresAt: input.expiresAt };
  },
  hooks: {
    // The secret is made before the transaction: the create's answer carries it, the row only its hash.
    prepare: async (input, _mode, ctx) => {
      const days = (input.expiresInDays as number | undefined) ?? DEFAULT_TOKEN_DAYS;
      return { ...input, token: API_TOKEN_PREFIX + newSecret(), expiresAt: iso(new Date(ctx.clock.now().getTime() + days * 86_400_000)) };
    },
    afterCreate: async (_tx, _id, input: Row) => ({ name: input.name, token: input.token, expiresAt: input.expiresAt, readOnly: !!input.readOnly }),
  },
  cli: { columns: ['id', 'name', 'identity.name', 'readOnly', 'expiresAt', 'lastUsedAt'] },
});
