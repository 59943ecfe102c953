// Cross-origin access for browser apps on origins the operator lists (--cors-origins). Off by default:
// without a list no CORS header is ever sent, so browsers keep other sites' pages away from the APIs.
// Credentials travel in headers (zt-session or a bearer token), never in cookies, so no
// Access-Control-Allow-Credentials is needed, and a listed origin is echoed rather than '*'.
import type { FastifyInstance } from 'fastify';

const ALLOW_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';
/** What a web client of the APIs sends beyond the CORS-safelisted headers. */
const ALLOW_HEADERS = 'zt-session, authorization, content-type, accept';
/** Response headers a page may read besides the safelisted ones. */
const EXPOSE_HEADERS = 'zt-session, x-request-id';
/** How long a browser may reuse a preflight answer (seconds). */
const MAX_AGE = '600';

function addVary(current: unknown, value: string): string {
  const parts = String(current ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return parts.some((p) => p.toLowerCase() === value.toLowerCase() || p === '*') ? parts.join(', ') : [...parts, value].join(', ');
}

/** Call before the authorization hook: preflights carry no credentials and must be answered without them. */
export function registerCors(app: FastifyInstance, origins: readonly string[]) {
  if (!origins.length) return;
  const allowed = new Set(origins);
  const listed = (origin: unknown): origin is string => typeof origin === 'string' && allowed.has(origin);

  app.addHook('onRequest', async (request, reply) => {
    const { origin } = request.headers;
    // A preflight is an OPTIONS request naming the method to come; any other OPTIONS goes on to routing.
    if (request.method !== 'OPTIONS' || !request.headers['access-control-request-method'] || !listed(origin)) return;
    reply
      .code(204)
      .header('access-control-allow-methods', ALLOW_METHODS)
      .header('access-control-allow-headers', ALLOW_HEADERS)
      .header('access-control-max-age', MAX_AGE);
    await reply.send();
    return reply;
  });

  app.addHook('onSend', async (request, reply, payload) => {
    // Answers differ by Origin, so shared caches must keep them apart.
    reply.header('vary', addVary(reply.getHeader('vary'), 'Origin'));
    const { origin } = request.headers;
    if (listed(origin)) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-expose-headers', EXPOSE_HEADERS);
    }
    return payload;
  });
}
