// A browsable API reference at /docs: Swagger UI (swagger-ui-dist, embedded in the single executable
// as assets) over the OpenAPI documents this controller generates from its own route schemas.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../model/errors.js';
import type { SpecRegistry } from '../specs.js';

const JS = 'application/javascript; charset=utf-8';
// The standalone preset brings the top bar whose selector switches between the two documents
// (BaseLayout has no such bar and ignores `urls`, which left the page blank).
const ASSETS = { 'swagger-ui.css': 'text/css; charset=utf-8', 'swagger-ui-bundle.js': JS, 'swagger-ui-standalone-preset.js': JS } as const;
type Asset = keyof typeof ASSETS;

/** From the executable's embedded assets (set by its loader), else from node_modules. */
function loadAsset(name: Asset): string {
  const embedded = (globalThis as { __ztcAssets?: Record<string, string> }).__ztcAssets?.[name];
  if (embedded !== undefined) return embedded;
  const dir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  return fs.readFileSync(path.join(dir, name), 'utf8');
}

const page = (specs: { id: string; name: string }[]) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>ztc API reference</title>
<style>.swagger-ui .topbar .download-url-wrapper input[type=text] { display: none; }</style>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/swagger-ui-standalone-preset.js"></script>
<script>
  window.ui = SwaggerUIBundle({
    dom_id: '#ui',
    urls: ${JSON.stringify(specs.map((s) => ({ url: `/docs/openapi/${s.id}.json`, name: s.name })))},
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout',
    deepLinking: true,
    filter: true,
    persistAuthorization: true,
  });
</script>
</body>
</html>
`;

export function registerDocs(app: FastifyInstance, specs: SpecRegistry) {
  const pub = { access: 'public' as const };
  const cache = new Map<Asset, string>();
  app.get('/docs', { config: pub, schema: { hide: true }, exposeHeadRoute: true }, async (_req, reply) => reply.type('text/html; charset=utf-8').send(page(specs.list())));
  for (const name of Object.keys(ASSETS) as Asset[]) {
    app.get(`/docs/${name}`, { config: pub, schema: { hide: true }, exposeHeadRoute: true }, async (_req, reply) => {
      if (!cache.has(name)) cache.set(name, loadAsset(name));
      return reply.type(ASSETS[name]).header('cache-control', 'public, max-age=86400').send(cache.get(name));
    });
  }
  app.get('/docs/openapi/:file', { config: pub, schema: { hide: true }, exposeHeadRoute: true }, async (req) => {
    const id = (req.params as { file: string }).file.replace(/\.json$/, '');
    const doc = specs.document(id);
    if (!doc) throw notFound('spec', id);
    return doc;
  });
}
