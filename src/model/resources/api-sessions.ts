import { sql } from 'kysely';
import { isSet } from '../../store/json.js';
import { apiSessionDetail } from '../auth/api-sessions.js';
import { revokeEndedJwtSessions } from '../auth/revoke.js';
import { hashSecret } from '../ids.js';
import { aliases, baseFilterable, defineResource } from '../resource.js';
import { apiSessionSchema } from '../schemas/api-session.js';

/**
 * Admin view of API sessions. As upstream, an admin sees each session's token: it is kept sealed at rest
 * (the routers need it back), opened here; sessions made before tokens were sealed show ''.
 */
export const apiSessions = defineResource({
  name: 'api session',
  plural: 'api-sessions',
  table: 'apiSessions',
  apis: ['management'],
  ops: ['list', 'get', 'delete'],
  description: 'API sessions: who is logged in, from where, and whether MFA is complete',
  schemas: { detail: apiSessionSchema },
  filterable: {
    ...baseFilterable,
    token: { column: 'e.token_hash', type: 'string', sortable: true, encode: hashSecret },
    identity: { column: 'e.identity_id', type: 'string', sortable: true },
    authenticator: { column: 'e.authenticator_id', type: 'string', sortable: true },
    ipAddress: { column: 'e.ip_address', type: 'string', sortable: true },
    lastActivityAt: { column: 'e.last_activity_at', type: 'datetime', sortable: true },
    ...aliases({
      identityId: { column: 'e.identity_id', type: 'string', sortable: true },
      authenticatorId: { column: 'e.authenticator_id', type: 'string', sortable: true },
      isMfaRequired: { column: 'e.is_mfa_required', type: 'boolean', sortable: true },
      isMfaComplete: { column: 'e.is_mfa_complete', type: 'boolean', sortable: true },
    }),
  },
  detailQuery: (db) =>
    db
      .selectFrom('apiSessions as e')
      .innerJoin('identities as i', 'i.id', 'e.identityId')
      .leftJoin('authenticators as au', (j) => j.onRef('au.id', '=', 'e.authenticatorId').on('au.method', '=', sql.lit('cert')))
      .selectAll('e')
      .select(['i.name as identityName', 'au.isExtendRequested as certExtendRequested', 'au.isKeyRollRequested as certKeyRollRequested', 'au.lastAuthResolvedToRoot as certResolvedToRoot']) as never,
  toDetail: (r, ctx) =>
    apiSessionDetail(ctx, r as never, r.tokenSealed ? ctx.sealer.open(r.tokenSealed as string) : '', false, {
      isCertExtendRequested: isSet(r.isCertExtendable) && isSet(r.certExtendRequested),
      isCertKeyRollRequested: isSet(r.isCertExtendable) && isSet(r.certKeyRollRequested),
      improperClientCertChain: isSet(r.isCertExtendable) && r.certResolvedToRoot != null && !isSet(r.certResolvedToRoot),
    }),
  hooks: {
    // A JWT API session (an OIDC login) is revoked as it goes: 2.x routers check its access token on their own.
    beforeDelete: async (tx, existing, ctx) => void (await revokeEndedJwtSessions(tx, ctx, [{ id: String(existing.id), expiresAt: existing.expiresAt as string | null }], 'deleted')),
  },
  cli: { columns: ['id', 'identity.name', 'ipAddress', 'isMfaRequired', 'isMfaComplete', 'lastActivityAt'] },
});

