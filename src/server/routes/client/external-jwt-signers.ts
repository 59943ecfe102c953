// The client's view of external JWT signers: public, so a client can find its login provider first.
import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../../../model/context.js';
import { listResource } from '../../../model/crud.js';
import type { Row } from '../../../model/resource.js';
import { externalJwtSigners, signerClientDetail } from '../../../model/resources/external-jwt-signers.js';
import { ListEnvelope, ListQuery } from '../../../model/schemas/common.js';
import type { ListParams } from '../../../store/list.js';
import { errors, filterableFields } from '../../crud.js';
import { listOf } from '../../envelope.js';

export function registerClientSigners(app: FastifyInstance, ctx: Ctx) {
  const view = {
    ...externalJwtSigners,
    source: (db: Ctx['store']['db']) => db.selectFrom('externalJwtSigners as e').where('e.enabled', '=', 1) as never,
    // An unset clientId is left out here, as upstream's client API does (its management API shows null).
    toDetail: (r: Row, c: Ctx) => {
      const { clientId, ...rest } = externalJwtSigners.toDetail(r, c) as Row;
      return clientId == null ? rest : { ...rest, clientId };
    },
  };
  app.get(
    '/external-jwt-signers',
    { config: { access: 'public' }, schema: { operationId: 'listExternalJwtSigners', tags: ['External JWT Signers'], summary: 'Enabled external identity providers a client may log in with', querystring: ListQuery, response: { 200: ListEnvelope(signerClientDetail), ...errors(400) } } },
    async (req) => {
      const { items, pagination } = await listResource(ctx, view, req.query as ListParams);
      return listOf(items, pagination, filterableFields(externalJwtSigners));
    },
  );
}
