// The fastify application: both APIs on one server. Built the same way for `ztc serve` (over TLS)
// and for the CLI's local mode and the tests (fastify inject).
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Ctx } from '../model/context.js';
import { ApiError } from '../model/errors.js';
import { NUL, nulRefused } from '../model/json-body.js';
import { jsonBodyParser } from './json-parser.js';
import { compileLenientValidator, compileValidator, openObjects, serializerCompilers } from './schema-compilers.js';
import { registerAuth, type LocalAdmin } from './plugins/auth.js';
import { registerErrorHandling } from './plugins/errors.js';
import { registerRateLimits } from './plugins/rate-limit.js';
import { serverTimeouts } from './connections.js';
import { RouteTable } from './route-table.js';
import { routedUrl } from './clean-path.js';
import { isListStream } from './envelope.js';
import { registerManagement } from './routes/management/index.js';
import { registerInformational, registerVersionRoutes } from './routes/shared/informational.js';
import { API_PATHS, type MountedApi } from './api-paths.js';
import { registerSessionRoutes } from './routes/shared/session.js';
import { registerExtend } from './routes/shared/extend.js';
import { registerMfa } from './routes/shared/mfa.js';
import { registerEnroll } from './routes/client/enroll.js';
import { registerServices } from './routes/shared/services.js';
import { registerDocs } from './routes/docs.js';
import { boundUnreadBodies } from './unread-bodies.js';
import { registerSessions } from './routes/shared/sessions.js';
import { registerControllers } from './routes/shared/controllers.js';
import { registerPosture } from './routes/client/posture.js';
import { registerSessionCertificates } from './routes/client/session-certificates.js';
import { registerClientSigners } from './routes/client/external-jwt-signers.js';
import { SpecRegistry } from './specs.js';
import { VERSION } from '../version.js';
import { registerCors } from './cors.js';
import { registerZac } from './zac.js';
import { registerNetworkJwts } from './routes/shared/network-jwts.js';
import { registerFabric } from './routes/fabric.js';
import { registerHealth } from './health.js';
import { registerPkiRenewal } from './pki-renewal.js';
import { registerEnrollmentEvents } from './enrollment-events.js';
import { watchTlsFailures } from './tls-failures.js';
import { registerOidc } from './routes/oidc/index.js';

export interface AppOptions {
  https?: FastifyServerOptions['https' & keyof FastifyServerOptions] | Record<string, unknown>;
  logger?: FastifyServerOptions['logger'];
  localAdmin?: LocalAdmin;
  /**
   * Which APIs to mount (default: all). The CLI's local mode mounts only the one a command calls:
   * registering ~500 routes was a fifth of a local `ztc identity list`.
   */
  apis?: readonly MountedApi[];
}


export type App = FastifyInstance & { routeTable: RouteTable };

function contentTypes(app: FastifyInstance) {
  const json = jsonBodyParser(app);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => json(req, body as string, done));
  // PEM bodies (CSR, certificate verification) arrive as text.
  app.addContentTypeParser(['text/plain', 'application/x-pem-file', 'application/pkcs10'], { parseAs: 'string' }, (_req, body, done) =>
    NUL.test(String(body)) ? done(nulRefused(), undefined) : done(null, body),
  );
  app.addHook('onRequest', async (request) => {
    if (/%00|\u0000/i.test(request.url)) throw new ApiError(400, 'INVALID_FIELD', 'NUL characters are not accepted in URLs');
  });
}

async function registerApi(app: FastifyInstance, ctx: Ctx, specs: SpecRegistry, api: 'client' | 'management') {
  const title = api === 'client' ? 'Edge Client API' : 'Edge Management API';
  await app.register(
    async (child) => {
      await child.register(swagger, {
        openapi: {
          openapi: '3.1.0',
          info: { title: `ztc ${title}`, version: VERSION, description: `The ${title} of the ztc controller, generated from its route schemas.` },
          components: { securitySchemes: { ztSession: { type: 'apiKey', in: 'header', name: 'zt-session' } } },
        },
        transform: ({ schema, url, route }) => {
          const config = route.config as { access?: string; unknownFields?: string } | undefined;
          const access = config?.access ?? 'admin';
          // A body whose undeclared fields are dropped is shown open: such a field is no error there.
          const body = config?.unknownFields === 'ignored' && schema?.body ? { body: openObjects(schema.body) } : {};
          return { schema: { ...schema, ...body, ...(access === 'public' ? {} : { security: [{ ztSession: [] }] }) } as typeof schema, url };
        },
      });
      specs.add(`edge-${api}`, title, () => child.swagger() as unknown as Record<string, unknown>);
      registerInformational(child, ctx, specs);
      registerSessionRoutes(child, ctx);
      registerExtend(child, ctx);
      registerMfa(child, ctx);
      registerServices(child, ctx, api);
      registerSessions(child, ctx, api);
      registerControllers(child, ctx, api);
      registerNetworkJwts(child, ctx);
      if (api === 'management') registerManagement(child, ctx);
      if (api === 'client') {
        registerEnroll(child, ctx);
        registerPosture(child, ctx);
        registerSessionCertificates(child, ctx);
        registerClientSigners(child, ctx);
      }
    },
    { prefix: API_PATHS[api] },
  );
}

export async function buildApp(ctx: Ctx, opts: AppOptions = {}): Promise<App> {
  const app = fastify({
    ...(opts.https ? { https: opts.https as never } : {}),
    logger: opts.logger ?? false,
    genReqId: () => randomUUID(),
    bodyLimit: 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // HEAD only where probes and browsers send it (/version, the health checks, the docs and the console
    // mark theirs): a HEAD twin of every GET doubled the cost of building the app (a local-mode command's
    // management API: 80-160 -> 40-50 ms of CPU). Other paths answer HEAD with 405, as upstream's all do.
    exposeHeadRoutes: false,
    return503OnClosing: true,
    ...serverTimeouts(ctx.config).fastify,
    rewriteUrl: (req) => routedUrl(req.url ?? '/'),
    // Compiled on first use, once per process (schema-compilers.ts): compiling all ~500 routes' schemas
    // up front cost over a second at every start, and every local-mode CLI command builds an app.
    schemaController: { compilersFactory: serializerCompilers as never },
  }) as unknown as App;
  const table = new RouteTable();
  app.decorate('routeTable', table);
  table.attach(app);
  app.setValidatorCompiler(compileValidator as never);
  // Routes that take upstream's bodies drop the fields they do not declare (schema-compilers.ts).
  app.addHook('onRoute', (route) => {
    if (route.config?.unknownFields === 'ignored' && !route.validatorCompiler) route.validatorCompiler = compileLenientValidator as never;
  });
  contentTypes(app);
  registerErrorHandling(app, table);
  registerCors(app, ctx.config.corsOrigins);
  registerAuth(app, ctx, opts.localAdmin);
  boundUnreadBodies(app);
  // Metrics off: no hook, no registry, no query observer; /metrics is then an unknown route (404) as any
  // other. prom-client is loaded only when they are on (local-mode commands: ~14 ms of their start).
  if (ctx.config.metrics === false) app.decorate('metrics', undefined);
  else (await import('./metrics.js')).registerMetrics(app, ctx);
  registerEnrollmentEvents(app, ctx);
  if (opts.https) watchTlsFailures(app, ctx);
  registerHealth(app, ctx);
  // The controller's own certificates renewing by themselves: its readiness check and metrics too.
  registerPkiRenewal(app, ctx);
  // The CLI's local mode is the administrator at the keyboard: no throttling there.
  if (!opts.localAdmin) await registerRateLimits(app, ctx.config);
  // Upstream names its process on every answer; the C SDK 0.29 compares it to know a restarted controller
  // (and crashes submitting posture data when it never saw one).
  const instanceId = randomUUID();
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-request-id', String(request.id));
    reply.header('ziti-instance-id', instanceId);
    if (isListStream(payload)) reply.header('content-type', 'application/json; charset=utf-8');
    // Upstream's JSON encoder ends every body with a newline, and `ziti edge ... -j` prints the body as
    // it came: without one the shell's prompt follows the closing brace on the same line.
    if (typeof payload === 'string' && payload.length && String(reply.getHeader('content-type') ?? '').startsWith('application/json') && !payload.endsWith('\n')) return payload + '\n';
    return payload;
  });

  const specs = new SpecRegistry();
  registerVersionRoutes(app, ctx);
  registerNetworkJwts(app, ctx);
  const mounts = new Set(opts.apis ?? ['client', 'management', 'fabric', 'docs']);
  // The OIDC provider beside the client API (as upstream's edge-oidc binding): off with --no-oidc.
  if (ctx.config.oidc !== false && mounts.has('client')) await registerOidc(app, ctx);
  if (mounts.has('client')) await registerApi(app, ctx, specs, 'client');
  if (mounts.has('management')) await registerApi(app, ctx, specs, 'management');
  if (mounts.has('fabric')) await registerFabric(app, ctx, specs);
  if (mounts.has('docs')) registerDocs(app, specs);
  if (!opts.apis) registerZac(app, ctx.config.zacDir);
  await app.ready();
  return app;
}
