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
