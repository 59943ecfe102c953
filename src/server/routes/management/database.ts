// Database maintenance: integrity scan and fix (one run at a time, in the background), snapshots.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { runState, startRun } from '../../../model/maintenance/integrity.js';
import { snapshotForApi } from '../../../model/maintenance/snapshot.js';
import { Empty, Envelope } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { empty, ok } from '../../envelope.js';

const tags = ['Database'];
const Results = Type.Object({
  inProgress: Type.Boolean(), fixingErrors: Type.Boolean(), tooManyErrors: Type.Boolean(),
  startTime: Type.String(), endTime: Type.String(), error: Type.String(),
  results: Type.Array(Type.Object({ description: Type.String(), fixed: Type.Boolean() })),
});

export function registerDatabase(app: FastifyInstance, ctx: Ctx) {
  for (const [url, operationId, fix, summary] of [
    ['/database/check-data-integrity', 'checkDataIntegrity', false, 'Start an integrity scan in the background; read it at /database/data-integrity-results'],
    ['/database/fix-data-integrity', 'fixDataIntegrity', true, 'Start an integrity scan that also repairs what it finds (in one transaction)'],
  ] as const) {
    app.post(url, { config: { access: 'admin' }, schema: { operationId, tags, summary, response: { 202: Envelope(Empty), ...errors(401, 429) } } }, async (_req, reply) => {
      const { done } = await startRun(ctx, fix);
      done.catch((e) => app.log.error(e, 'integrity run failed to record its result'));
      reply.code(202);
      return empty();
    });
  }
  app.get(
    '/database/data-integrity-results',
    { config: { access: 'admin' }, schema: { operationId: 'dataIntegrityResults', tags, summary: 'The state and findings of the last (or running) integrity scan', response: { 200: Envelope(Results), ...errors(401) } } },
    async () => ok(await runState(ctx.store.db, ctx.clock.now())),
  );
  app.post(
    '/database/snapshot',
    { config: { access: 'admin' }, schema: { operationId: 'createDatabaseSnapshot', tags, summary: 'Copy the live database into the data dir (snapshots/ztc-<time>.db; pg_dump on PostgreSQL); one a minute', response: { 200: Envelope(Type.Object({ name: Type.String(), sizeBytes: Type.Integer() })), ...errors(401, 409, 429) } } },
    async () => ok(await snapshotForApi(ctx)),
  );
}
