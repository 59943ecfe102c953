// OpenZiti's admin console (ZAC) served from a directory of its built files at /zac/, on the API's own
// port, as upstream controllers do with their "zac"/"spa" web binding: ZAC then finds the controller at
// its own origin. Like upstream's SPA handler, whatever is not a file inside the directory gets
// index.html, so the app's routes (/zac/identities/ID, /zac/config-types/host.v1) load on a reload.
// The routes exist (and are public) whether or not a directory is configured; without one they are 404.
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConfigError } from '../config.js';
import { ApiError } from '../model/errors.js';

export const ZAC_PATH = '/zac/';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.eot': 'application/vnd.ms-fontobject',
  '.wasm': 'application/wasm',
};

/** Angular (and most bundlers) name built files with a content hash: main.9874ecf8d877902a.js. */
const HASHED = /\.[0-9a-f]{16,}\.[a-z0-9]+$/i;
/** A hashed name never changes content, so browsers may keep it; everything else is revalidated. */
const FOREVER = 'public, max-age=31536000, immutable';

/** The directory's real path; refuses (at start) one that is missing or holds no index.html. */
export function zacRoot(dir: string): string {
  let root: string;
  try {
    root = fs.realpathSync(dir);
  } catch {
    throw new ConfigError(`zacDir: ${dir} does not exist`);
  }
  if (!fs.statSync(root).isDirectory()) throw new ConfigError(`zacDir: ${dir} is not a directory`);
  if (!fs.existsSync(path.join(root, 'index.html'))) throw new ConfigError(`zacDir: ${dir} has no index.html (expected a built ZAC release)`);
  return root;
}

interface Found {
  file: string;
  stat: fs.Stats;
}

/**
 * The file a request path names inside root, or undefined. Each segment is decoded on its own, so an
 * encoded slash or backslash cannot join segments; dot-segments and hidden names are refused; and the
 * real path (symlinks resolved) must still lie inside root.
 */
async function fileFor(root: string, urlPath: string): Promise<Found | undefined> {
  const names: string[] = [];
  for (const raw of urlPath.split('/')) {
    if (!raw) continue;
    let name: string;
    try {
      name = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    if (name.startsWith('.') || /[/\\\0]/.test(name)) return undefined;
    names.push(name);
  }
  if (!names.length) return undefined;
  try {
    const real = await fs.promises.realpath(path.join(root, ...names));
    if (!real.startsWith(root + path.sep)) return undefined;
    const stat = await fs.promises.stat(real);
    return stat.isFile() ? { file: real, stat } : undefined;
  } catch {
    return undefined;
  }
}

const etagOf = (stat: fs.Stats) => `"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`;

function notModified(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match'];
  return typeof header === 'string' && header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}

async function sendFile(request: FastifyRequest, reply: FastifyReply, found: Found, isIndex: boolean) {
  const etag = etagOf(found.stat);
  reply
    .header('content-type', TYPES[path.extname(found.file).toLowerCase()] ?? 'application/octet-stream')
    .header('cache-control', !isIndex && HASHED.test(found.file) ? FOREVER : 'no-cache')
    .header('etag', etag)
    .header('last-modified', found.stat.mtime.toUTCString())
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'SAMEORIGIN');
  if (notModified(request, etag)) return reply.code(304).send();
  reply.header('content-length', found.stat.size);
  if (request.method === 'HEAD') return reply.send();
  return reply.send(fs.createReadStream(found.file));
}

export function registerZac(app: FastifyInstance, dir: string) {
  const root = dir ? zacRoot(dir) : '';
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!root) throw new ApiError(404, 'NOT_FOUND', 'The admin console is not served here: start the controller with --zac-dir DIR (a ZAC release)');
    const [urlPath, query] = request.url.split(/\?(.*)/s, 2);
    // Without the slash, the page's relative URLs would resolve against the server root.
    if (urlPath === '/zac' && !request.originalUrl.split('?')[0].endsWith('/')) return reply.redirect(ZAC_PATH + (query ? `?${query}` : ''), 301);
    const found = await fileFor(root, urlPath.slice('/zac'.length));
    if (found) return sendFile(request, reply, found, found.file === path.join(root, 'index.html'));
    const index = await fileFor(root, '/index.html');
    if (!index) throw new ApiError(404, 'NOT_FOUND', 'The admin console directory has no index.html');
    return sendFile(request, reply, index, true);
  };
  const opts = { config: { access: 'public' as const }, schema: { hide: true }, exposeHeadRoute: true };
  app.get('/zac', opts, handler);
  app.get('/zac/*', opts, handler);
}
