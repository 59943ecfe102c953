// Upstream's router answers the lexically cleaned path (Go's path.Clean): repeated slashes collapse,
// `.` segments vanish, `..` removes the segment before it and a trailing slash is dropped. ZAC relies on
// it (it reads entities back at `/<plural>/<id>//`). Cleaning happens before routing, so the route
// table, the public-route list and authorization all see the same path the handler answers.

/** The cleaned form of a URL path (no query string). */
export function cleanPath(path: string): string {
  const out: string[] = [];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  return '/' + out.join('/');
}

/** A request URL with its path cleaned and its query string kept as sent. */
export function cleanUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const clean = cleanPath(path);
  if (clean === path) return url;
  return q < 0 ? clean : clean + url.slice(q);
}

/**
 * Older SDKs call some Client API operations at the server root: the C SDK up to 0.29 enrolls at
 * `POST /enroll?method=ott` under the JWT's issuer. Upstream serves the Client API there too; these
 * first segments are the Client API's own (no root route of ours uses them).
 */
const LEGACY_CLIENT_ROOTS = new Set(['enroll', 'authenticate', 'current-identity', 'current-api-session', 'services', 'sessions', 'posture-response', 'posture-response-bulk', 'external-jwt-signers', 'protocols']);
const CLIENT_BASE = '/edge/client/v1';

/** cleanUrl, then an unprefixed Client API path moved under the Client API's base. */
export function routedUrl(url: string): string {
  const clean = cleanUrl(url);
  const first = /^\/([^/?]+)/.exec(clean)?.[1];
  return first && LEGACY_CLIENT_ROOTS.has(first) ? CLIENT_BASE + clean : clean;
}
