// Public informational routes, answered identically at the root and under both API base paths.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { notFound } from '../../../model/errors.js';
import { ENUMERATED_ROUTER_CAPABILITIES } from '../../../model/router-capabilities.js';
import { baseFields, Envelope, IdParams, ListEnvelope, MapOf } from '../../../model/schemas/common.js';
import { BUILD_DATE, EDGE_API_VERSION, REVISION, VERSION } from '../../../version.js';
import { ok } from '../../envelope.js';
import type { SpecRegistry } from '../../specs.js';

import { API_PATHS, FABRIC_PATH } from '../../api-paths.js';
export { API_PATHS };

/** Where the health checks answer (server/health.ts); upstream names /health-checks/v1 but answers here too. */
const HEALTH_CHECKS_PATH = '/health-checks';

/** Every capability value the Edge API defines; the version answer lists those we have. */
const ENUMERATED_CAPABILITIES = ['OIDC_AUTH', 'HA_CONTROLLER', 'OIDC_AUTH_WITH_CSR'];

const ApiVersion = Type.Object({ apiBaseUrls: Type.Array(Type.String()), path: Type.String(), version: Type.Optional(Type.String()) });
const VersionInfo = Type.Object({
  version: Type.String(),
  revision: Type.String(),
  buildDate: Type.String(),
  runtimeVersion: Type.String(),
  capabilities: Type.Array(Type.String()),
  apiVersions: MapOf(MapOf(ApiVersion)),
});
const SpecEntry = Type.Object({ ...baseFields, name: Type.String() });
const pub = { access: 'public' as const };

export function versionInfo(ctx: Ctx) {
  const urls = (path: string) => [...new Set(ctx.config.hostnames.concat('localhost'))].map((h) => `https://${h}:${ctx.config.port}${path}`);
  const api = (path: string) => ({ v1: { apiBaseUrls: urls(path), path, version: EDGE_API_VERSION } });
  // Upstream 2.x gives no version for its APIs; the Edge APIs keep theirs (1.x clients read it).
  const other = (path: string) => ({ v1: { apiBaseUrls: urls(path), path } });
  return {
    version: `v${VERSION}`,
    revision: REVISION,
    buildDate: BUILD_DATE,
    runtimeVersion: process.version,
    // The OIDC provider only when it is on (routes/oidc/): clients that see OIDC_AUTH log in through it.
    // Never HA_CONTROLLER: it switches the C SDK 1.1-1.9.4 to flows and controller lists ztc does not serve.
    capabilities: ctx.config.oidc === false ? [] : ['OIDC_AUTH', 'OIDC_AUTH_WITH_CSR'],
    apiVersions: {
      edge: api(API_PATHS.client), 'edge-client': api(API_PATHS.client), 'edge-management': api(API_PATHS.management),
      // The other APIs this controller serves, as 2.x lists them (ZAC reads fabric to look for HA peers).
      fabric: other(FABRIC_PATH), 'health-checks': other(HEALTH_CHECKS_PATH),
      ...(ctx.config.oidc === false ? {} : { 'edge-oidc': api('/oidc') }),
    },
  };
}

/** /version, / and the EST CA store: at the root and under each API base. */
export function registerVersionRoutes(app: FastifyInstance, ctx: Ctx, opIdSuffix = '') {
  const version = { operationId: `listVersion${opIdSuffix}`, tags: ['Informational'], summary: 'Version of the controller and the APIs it serves', response: { 200: Envelope(VersionInfo) } };
  app.get('/version', { config: pub, schema: version, exposeHeadRoute: true }, async () => ok(versionInfo(ctx)));
  app.get('/', { config: pub, schema: { ...version, operationId: `listRoot${opIdSuffix}` }, exposeHeadRoute: true }, async () => ok(versionInfo(ctx)));
  app.get(
    '/.well-known/est/cacerts',
    {
      config: pub,
      schema: {
        operationId: `listWellKnownCas${opIdSuffix}`, tags: ['Well Known'],
        summary: 'The CA certificates to trust, as base64 PKCS#7 (EST, RFC 7030)',
        produces: ['application/pkcs7-mime'], response: { 200: Type.String() },
      },
    },
    async (_req, reply) => reply.type('application/pkcs7-mime').header('content-transfer-encoding', 'base64').send(ctx.pki.cacertsPkcs7),
  );
}

export function registerInformational(app: FastifyInstance, ctx: Ctx, specs: SpecRegistry) {
  registerVersionRoutes(app, ctx);
  app.get(
    '/enumerated-capabilities',
    { config: pub, schema: { operationId: 'listEnumeratedCapabilities', tags: ['Informational'], summary: 'Every capability a controller can announce', response: { 200: Envelope(Type.Array(Type.String())) } } },
    async () => ok(ENUMERATED_CAPABILITIES),
  );
  app.get(
    '/enumerated-router-capabilities',
    {
      config: pub,
      schema: {
        operationId: 'listEnumeratedRouterCapabilities', tags: ['Informational'],
        summary: 'Every capability a router can announce, as edge routers\' capabilities name them',
        response: { 200: Envelope(Type.Array(Type.String())) },
      },
    },
    async () => ok(ENUMERATED_ROUTER_CAPABILITIES),
  );
  app.get(
    '/specs',
    { config: pub, schema: { operationId: 'listSpecs', tags: ['Informational'], summary: 'The API specifications this controller serves', response: { 200: ListEnvelope(SpecEntry) } } },
    async () => ok(specs.list()),
  );
  app.get(
    '/specs/:id',
    { config: pub, schema: { operationId: 'detailSpec', tags: ['Informational'], summary: 'One API specification', params: IdParams, response: { 200: Envelope(SpecEntry) } } },
    async (req) => {
      const { id } = req.params as { id: string };
      const entry = specs.list().find((s) => s.id === id);
      if (!entry) throw notFound('spec', id);
      return ok(entry);
    },
  );
  app.get(
    '/specs/:id/spec',
    {
      config: pub,
      schema: { operationId: 'detailSpecBody', tags: ['Informational'], summary: 'The OpenAPI document of a specification, as JSON text in data (?format=yaml: the YAML file itself)', params: IdParams },
    },
    async (req, reply) => {
      const { id } = req.params as { id: string };
      const doc = specs.document(id);
      if (!doc) throw notFound('spec', id);
      if ((req.query as { format?: string }).format === 'yaml' || /yaml/.test(String(req.headers.accept ?? ''))) {
        return reply.type('text/yaml').send(specs.yaml(id));
      }
      // Upstream answers the document as a string in data; clients parse it.
      return ok(JSON.stringify(doc));
    },
  );
}
