// Identity actions beyond CRUD: disable / enable, removing MFA.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { iso } from '../../../model/clock.js';
import type { Ctx } from '../../../model/context.js';
import { endApiSessions } from '../../../model/auth/revoke.js';
import { asUpdate, writeTx } from '../../../model/crud.js';
import { recordRowChange } from '../../../model/events/record.js';
import { identities } from '../../../model/resources/identities.js';
import { actorCtx } from '../../actor.js';
import { notFound } from '../../../model/errors.js';
import { Empty, Envelope, IdParams } from '../../../model/schemas/common.js';
import type { Tx } from '../../../store/db.js';
import { errors } from '../../crud.js';
import { empty } from '../../envelope.js';
import { IGNORES_UNKNOWN_FIELDS } from '../../schema-compilers.js';

const admin = { access: 'admin' as const };
const tags = ['Identities'];

async function mustExist(tx: Tx, id: string) {
  if (!(await tx.selectFrom('identities').select('id').where('id', '=', id).executeTakeFirst())) throw notFound('identity', id);
}

export function registerIdentityActions(app: FastifyInstance, ctx: Ctx) {
  app.post(
    '/identities/:id/disable',
    {
      config: { ...admin, ...IGNORES_UNKNOWN_FIELDS },
      schema: {
        operationId: 'disableIdentity', tags, summary: 'Disable an identity for durationMinutes (0: until enabled); its API sessions end at once',
        params: IdParams, body: Type.Object({ durationMinutes: Type.Integer({ minimum: 0, maximum: 52_560_000 }) }, { additionalProperties: false }),
        response: { 200: Envelope(Empty), ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const { id } = req.params as { id: string };
      const { durationMinutes } = req.body as { durationMinutes: number };
      const now = ctx.clock.now();
      await writeTx(actorCtx(ctx, req), async (tx) => {
        await mustExist(tx, id);
        await asUpdate(tx, actorCtx(ctx, req), identities, id, 'disable', () => tx
          .updateTable('identities')
          .set({ disabled: 1, disabledAt: iso(now), disabledUntil: durationMinutes > 0 ? iso(new Date(now.getTime() + durationMinutes * 60_000)) : null, updatedAt: iso(now) })
          .where('id', '=', id)
          .execute());
        await endApiSessions(tx, actorCtx(ctx, req), { identityId: id }, 'identity-disabled');
      });
      return empty();
    },
  );
  app.post(
    '/identities/:id/enable',
    { config: admin, schema: { operationId: 'enableIdentity', tags, summary: 'Enable an identity: clears the disabled state and password lockouts', params: IdParams, response: { 200: Envelope(Empty), ...errors(401, 404) } } },
    async (req) => {
      const { id } = req.params as { id: string };
      await writeTx(actorCtx(ctx, req), async (tx) => {
        await mustExist(tx, id);
        await asUpdate(tx, actorCtx(ctx, req), identities, id, 'enable', () => tx.updateTable('identities').set({ disabled: 0, disabledAt: null, disabledUntil: null, updatedAt: iso(ctx.clock.now()) }).where('id', '=', id).execute());
        await tx.updateTable('authenticators').set({ failedAttempts: 0, lockedUntil: null }).where('identityId', '=', id).execute();
      });
      return empty();
    },
  );
  app.delete(
    '/identities/:id/mfa',
    { config: admin, schema: { operationId: 'removeIdentityMfa', tags, summary: 'Remove the MFA enrollment of an identity (when its codes are lost)', params: IdParams, response: { 200: Envelope(Empty), ...errors(401, 404) } } },
    async (req) => {
      const { id } = req.params as { id: string };
      await writeTx(actorCtx(ctx, req), async (tx) => {
        await mustExist(tx, id);
        const mfa = await tx.selectFrom('mfa').selectAll().where('identityId', '=', id).executeTakeFirst();
        await asUpdate(tx, actorCtx(ctx, req), identities, id, 'remove-mfa', () => tx.deleteFrom('mfa').where('identityId', '=', id).execute());
        // The enrolment itself is gone too (upstream's mfas entity): its state without its secret and codes.
        if (mfa) await recordRowChange(tx, actorCtx(ctx, req), 'mfas', 'deleted', mfa.id, mfa as never, null, 'remove-mfa');
      });
      return empty();
    },
  );
}
