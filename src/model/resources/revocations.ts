// Revocations (upstream 2.x, edge API 0.28.1+): list, detail and create, as upstream's management API
// serves them (controller/internal/routes/revocation_router.go). A create names what it revokes by its
// id and replaces an earlier revocation of the same id (upstream's CreateOrReplace), with a fresh expiry
// and cut-off. What the revocation does to live API sessions and sessions is model/auth/revocations.ts.
import { Type } from 'typebox';
import { fromJson } from '../../store/json.js';
import { iso } from '../clock.js';
import { couldNotValidate, notFound } from '../errors.js';
import { recordChange } from '../events/record.js';
import { enforceRevocation, isTokenId, isUuid, REVOCATION_LIFETIME_MS, REVOCATION_TYPES } from '../auth/revocations.js';
import { baseDetail, baseFilterable, defineResource, type ResourceDecl } from '../resource.js';
import { baseFields, DateTime, Tags } from '../schemas/common.js';

const RevocationType = Type.Union(
  REVOCATION_TYPES.map((t) => Type.Literal(t)),
  { description: 'JTI: a token by its id (here also an API session or a session by its id); API_SESSION: an API session and every token it issued; IDENTITY: every token and API session of the identity issued up to now' },
);

export const revocationCreate = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64, description: 'What is revoked: a token id (a UUID, or the jti of a token this controller issued) or API session id (a UUID, or the id of an API session or session of this controller), or an identity id' }),
    type: RevocationType,
    tags: Type.Optional(Tags),
  },
  { additionalProperties: false },
);

export const revocationDetail = Type.Object({
  ...baseFields,
  type: Type.String(),
  expiresAt: DateTime,
});

export const revocations: ResourceDecl = defineResource({
  name: 'revocation',
  plural: 'revocations',
  table: 'revocations',
  apis: ['management'],
  ops: ['list', 'get', 'create'],
  description: 'Revocations: a token, an API session or an identity whose tokens no longer count; what it names that is live ends at once',
  schemas: { detail: revocationDetail, create: revocationCreate },
  filterable: {
    ...baseFilterable,
    type: { column: 'e.type', type: 'string', sortable: true },
    expiresAt: { column: 'e.expires_at', type: 'datetime', sortable: true },
    issuedBefore: { column: 'e.issued_before', type: 'datetime', sortable: true },
  },
  idOf: (input) => String(input.id),
  toDetail: (r) => Object.assign(baseDetail('revocations', r), { type: r.type, expiresAt: r.expiresAt }),
  toRow: async (input, _mode, tx, ctx) => {
    const id = String(input.id);
    const type = String(input.type);
    if (type === 'IDENTITY') {
      const identity = await tx.selectFrom('identities').select('id').where('id', '=', id).executeTakeFirst();
      // 404 as upstream answers an identity revocation of an unknown identity.
      if (!identity) throw notFound('identity', id);
    } else if (!isUuid(id) && !(type === 'JTI' && isTokenId(id))) {
      // Upstream takes only UUIDs here (its JWTs' ids); ztc's own API sessions and sessions have short ids,
      // and the tokens its OIDC provider issues 22-character ones (model/auth/oidc/tokens.ts).
      const own = await tx.selectFrom('apiSessions').select('id').where('id', '=', id).executeTakeFirst()
        ?? (type === 'JTI' ? await tx.selectFrom('sessions').select('id').where('id', '=', id).executeTakeFirst() : undefined);
      if (!own) throw couldNotValidate('id', `must be a valid UUID v4, or the id of ${type === 'JTI' ? 'a token, an API session or a session' : 'an API session'} of this controller`, id);
    }
    // A revocation of the same id is replaced (upstream's CreateOrReplace): a new expiry and cut-off.
    const before = await tx.selectFrom('revocations').selectAll().where('id', '=', id).executeTakeFirst();
    if (before) {
      await tx.deleteFrom('revocations').where('id', '=', id).execute();
      // Only its own tags leave the index: the index is by id alone, and an IDENTITY revocation's id is
      // its identity's (clearing every row of the id dropped the identity's role attributes, so policies
      // made later left it out).
      const keys = Object.keys(fromJson<Record<string, unknown>>(before.tags, {}));
      if (keys.length) await tx.deleteFrom('entityTags').where('entityId', '=', id).where('tagKey', 'in', keys).execute();
      await recordChange(tx, ctx, revocations, 'deleted', id, before as never, null, 'replaced');
    }
    const now = ctx.clock.now();
    return { type, expiresAt: iso(new Date(now.getTime() + REVOCATION_LIFETIME_MS)), issuedBefore: iso(now) };
  },
  hooks: {
    afterCreate: async (tx, id, _input, ctx) => {
      const row = await tx.selectFrom('revocations').select(['type', 'issuedBefore']).where('id', '=', id).executeTakeFirstOrThrow();
      await enforceRevocation(tx, ctx, { id, type: row.type, issuedBefore: row.issuedBefore });
    },
  },
  cli: { columns: ['id', 'type', 'createdAt', 'expiresAt'] },
});
