// GET /export and POST /import (our extension, not upstream's): the whole network model as one
// document with references by name, and making the controller match one (model/export-import.ts).
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import YAML from 'yaml';
import type { Ctx } from '../../../model/context.js';
import { exportItems } from '../../../model/export-import.js';
import { importModel, PLAN_LISTED } from '../../../model/import-model.js';
import { importInThread, importsOnThread } from '../../../model/import-thread.js';
import { jsonBodyParser } from '../../json-parser.js';
import { Envelope } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { meta, ok } from '../../envelope.js';
import { actorCtx } from '../../actor.js';

const Document = Type.Object(
  { ztcModel: Type.Optional(Type.Integer({ description: 'the document format version: 1' })) },
  {
    additionalProperties: Type.Array(Type.Object({ name: Type.String() }, { additionalProperties: true })),
    description: 'A list per kind (configTypes, configs, services, postureChecks, externalJwtSigners, authPolicies, cas, identities, edgeRouters, transitRouters, edgeRouterPolicies, serviceEdgeRouterPolicies, servicePolicies), each entity with its create fields and references by name',
  },
);
const Plan = Type.Object({
  applied: Type.Boolean({ description: 'false on a dry run, or when there was nothing to do' }),
  plan: Type.Array(
    Type.Object({
      action: Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('delete')]),
      kind: Type.String(),
      name: Type.String(),
      changes: Type.Optional(Type.Array(Type.Object({ field: Type.String(), from: Type.Unknown(), to: Type.Unknown() }))),
    }),
  ),
  omitted: Type.Optional(Type.Integer({ description: `steps beyond the first ${PLAN_LISTED}, not listed (only when there are any)` })),
  counts: Type.Optional(Type.Object({ create: Type.Integer(), update: Type.Integer(), delete: Type.Integer() }, { description: 'the steps of each action, listed or not (only when some are not listed)' })),
});

/**
 * The document as it is read, a page at a time: JSON in the usual envelope, or (Accept:
 * application/yaml) the YAML file `ztc export` writes, whose top-level items each start a line with
 * '- ' (what the CLI counts for its progress).
 */
function exportStream(ctx: Ctx, yaml: boolean): Readable {
  async function* text() {
    yield yaml ? 'ztcModel: 1\n' : '{"data":{"ztcModel":1';
    let open: string | undefined;
    let first = true;
    for await (const x of exportItems(ctx)) {
      if ('total' in x) {
        if (open && !yaml) yield ']';
        if (open && yaml && first) yield ' []\n';
        open = x.kind;
        first = true;
        yield yaml ? `${x.kind}:` : `,${JSON.stringify(x.kind)}:[`;
        continue;
      }
      if (yaml) yield (first ? '\n' : '') + YAML.stringify([x.item], { lineWidth: 0 });
      else yield (first ? '' : ',') + JSON.stringify(x.item);
      first = false;
    }
    if (open && yaml && first) yield ' []\n';
    yield yaml ? '' : `]},"meta":${JSON.stringify(meta())}}`;
  }
  return Readable.from(text(), { objectMode: false });
}

export function registerModel(app: FastifyInstance, ctx: Ctx) {
  app.get(
    '/export',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'exportModel',
        tags: ['Informational'],
        summary: 'ztc extension: every identity, service, config, config type, policy, posture check, CA, auth policy, JWT signer and router, with references by name, no ids and no secrets',
        response: { 200: Envelope(Document), ...errors(401) },
      },
    },
    async (req, reply) => {
      const yaml = /yaml/.test(String(req.headers.accept ?? ''));
      reply.header('content-type', yaml ? 'application/yaml; charset=utf-8' : 'application/json; charset=utf-8');
      return reply.send(exportStream(ctx, yaml));
    },
  );
  // The import in a scope of its own, for its own JSON parser: a large body into a SQLite file is not
  // parsed here but handed, as it arrived, to the import's thread (model/import-thread.ts), which parses,
  // checks, plans and applies it. Parsing and checking 10 MB of JSON alone held this thread for 100 ms
  // and more, and every other client waited meanwhile.
  app.register(async (scope) => {
    const usual = jsonBodyParser(scope);
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
      const bytes = body as Buffer;
      if (importsOnThread(ctx, bytes.length)) return done(null, new Unparsed(bytes));
      usual(req, bytes.toString('utf8'), done);
    });
    // The body schema is checked here for a parsed body; the import's thread checks an unparsed one
    // itself (importModel does, item by item), so it is set aside before the schema sees it.
    scope.addHook('preValidation', async (req) => {
      if (req.body instanceof Unparsed) {
        unparsed.set(req, req.body.bytes);
        req.body = {};
      }
    });
    scope.post(
      '/import',
      {
        config: { access: 'admin' },
        // Checked only once the caller is known to be an admin (authorization runs on the headers).
        bodyLimit: ctx.config.importBodyLimitMb * 1024 * 1024,
        schema: {
          operationId: 'importModel',
          tags: ['Informational'],
          summary: 'ztc extension: make the controller match a document from exportModel in one transaction (creates, updates, and deletes with prune); answers the plan (its first steps, and how many more). The body may be up to importBodyLimitMb (default 64 MiB)',
          querystring: Type.Object(
            {
              dryRun: Type.Optional(Type.Boolean({ description: 'only answer the plan (every item is still checked)' })),
              prune: Type.Optional(Type.Boolean({ description: 'also delete what the document does not name (system entities stay)' })),
            },
            { additionalProperties: false },
          ),
          body: Document,
          response: { 200: Envelope(Plan), ...errors(400, 401) },
        },
      },
      async (req) => {
        const q = req.query as { dryRun?: boolean; prune?: boolean };
        const o = { dryRun: q.dryRun, prune: q.prune };
        const bytes = unparsed.get(req);
        return ok(await (bytes ? importInThread(actorCtx(ctx, req), bytes, o) : importModel(actorCtx(ctx, req), req.body, o)));
      },
    );
  });
}

/** A large import body, as it arrived: for the import's thread. */
class Unparsed {
  constructor(readonly bytes: Buffer) {}
}
const unparsed = new WeakMap<object, Buffer>();
