// Every route anyone may call without an API session, in one place. A route is public only if it is
// listed here, and everything listed here must be declared public: the app refuses to start otherwise
// (checked as routes are registered), so no route becomes open by a slip in its declaration.
const API_BASES = ['/edge/client/v1', '/edge/management/v1'];

/** Paths under both API bases; "all:" also under the server root, "root:" under the root only, "client:" in the client API only. */
const PUBLIC: [method: string, path: string, why: string][] = [
  ['GET', 'all:', 'version information'],
  ['GET', 'all:/version', 'version information'],
  ['GET', 'all:/.well-known/est/cacerts', 'the CA store clients trust before anything else'],
  ['GET', 'all:/network-jwts', 'the network JWT: the controller\'s address under its enrollment signature, no secret'],
  ['GET', '/enumerated-capabilities', 'capabilities, for clients choosing how to log in'],
  ['GET', '/enumerated-router-capabilities', 'the names of router capabilities, as edge routers show them'],
  ['GET', '/specs', 'the API specifications'],
  ['GET', '/specs/:id', 'the API specifications'],
  ['GET', '/specs/:id/spec', 'the API specifications'],
  ['POST', '/authenticate', 'logging in'],
  ['GET', 'client:/protocols', 'the controller\'s client addresses'],
  ['GET', 'client:/external-jwt-signers', 'the identity providers a client may log in with'],
  ['POST', 'client:/enroll', 'enrollment: the one-time token or the certificate is the credential'],
  ['POST', 'client:/enroll/ott', 'enrollment'],
  ['POST', 'client:/enroll/updb', 'enrollment'],
  ['POST', 'client:/enroll/token', 'enrollment by an external identity provider\'s JWT: the JWT, checked by its signer, is the credential'],
  ['POST', 'client:/enroll/ottca', 'enrollment'],
  ['POST', 'client:/enroll/ca', 'enrollment'],
  ['POST', 'client:/enroll/erott', 'router enrollment'],
  ['POST', 'client:/enroll/extend/router', 'router certificate extension: the router\'s current certificate is the credential'],
  ['POST', 'client:/enroll/challenge', 'proof that this controller holds its enrollment key'],
  ['GET', 'client:/enroll/jwks', 'the keys that sign enrollment JWTs'],
  ['GET', 'root:/docs', 'the API reference page'],
  ['GET', 'root:/docs/swagger-ui.css', 'the API reference page'],
  ['GET', 'root:/docs/swagger-ui-bundle.js', 'the API reference page'],
  ['GET', 'root:/docs/swagger-ui-standalone-preset.js', 'the API reference page'],
  ['GET', 'root:/docs/openapi/:file', 'the API reference page'],
  ['GET', 'root:/health-checks', 'readiness for probes and load balancers: verdicts only, no secrets'],
  ['GET', 'root:/health-checks/ready', 'readiness for probes and load balancers'],
  ['GET', 'root:/health-checks/live', 'liveness for probes'],
  ['GET', 'root:/zac', 'the admin console\'s static files (it logs in through the API like any client)'],
  ['GET', 'root:/zac/*', 'the admin console\'s static files'],
  // The OIDC provider (routes/oidc/): logging in is how one gets credentials; each step checks its own
  // (the authorization request's id, the password, the TLS certificate, the code with its PKCE verifier,
  // a refresh or access token).
  ['GET', 'root:/.well-known/openid-configuration', 'OIDC discovery: the provider\'s endpoints'],
  ['GET', 'root:/oidc/.well-known/openid-configuration', 'OIDC discovery'],
  ['GET', 'root:/oidc/keys', 'the public keys tokens are signed with'],
  ['GET', 'root:/oidc/authorize', 'starting an OIDC login'],
  ['POST', 'root:/oidc/authorize', 'starting an OIDC login'],
  ['GET', 'root:/oidc/authorize/callback', 'a finished OIDC login\'s code (PKCE binds it to its requester)'],
  ...['password', 'username', 'cert', 'ext-jwt'].flatMap((m): [string, string, string][] => [['GET', `root:/oidc/login/${m}`, 'the OIDC login page'], ['POST', `root:/oidc/login/${m}`, 'logging in through OIDC']]),
  ['GET', 'root:/oidc/login/auth-queries', 'what an OIDC login still owes'],
  ['POST', 'root:/oidc/login/totp', 'an OIDC login\'s TOTP code'],
  ['POST', 'root:/oidc/login/totp/enroll', 'enrolling TOTP during an OIDC login that requires it'],
  ['DELETE', 'root:/oidc/login/totp/enroll', 'enrolling TOTP during an OIDC login'],
  ['POST', 'root:/oidc/login/totp/enroll/verify', 'enrolling TOTP during an OIDC login'],
  ['POST', 'root:/oidc/oauth/token', 'OIDC tokens for a code, a refresh token or an exchange'],
  ['POST', 'root:/oidc/oauth/introspect', 'whether a token is live'],
  ['GET', 'root:/oidc/userinfo', 'who an access token is (checks the token)'],
  ['POST', 'root:/oidc/userinfo', 'who an access token is (checks the token)'],
  ['POST', 'root:/oidc/revoke', 'revoking a token one holds'],
  ['GET', 'root:/oidc/end_session', 'logging out (an ID token hint names the session)'],
  ['POST', 'root:/oidc/end_session', 'logging out'],
  ['GET', 'root:/oidc/logged-out', 'the page after logging out'],
];

export const PUBLIC_ROUTES: ReadonlySet<string> = new Set(
  PUBLIC.flatMap(([method, p]) => {
    if (p.startsWith('root:')) return [`${method} ${p.slice(5)}`];
    if (p.startsWith('client:')) return [`${method} /edge/client/v1${p.slice(7)}`];
    if (p.startsWith('all:')) return ['', ...API_BASES].map((b) => `${method} ${`${b}${p.slice(4)}` || '/'}`);
    return API_BASES.map((b) => `${method} ${b}${p}`);
  }),
);

export const isListedPublic = (method: string, url: string) => PUBLIC_ROUTES.has(`${method} ${url.replace(/(.)\/$/, '$1')}`);

export class PublicRouteMismatch extends Error {}

/** Called for each route at registration: its declared access must agree with the list. */
export function checkPublic(method: string, url: string, access: string) {
  const listed = isListedPublic(method, url);
  if (listed && access !== 'public') throw new PublicRouteMismatch(`${method} ${url} is listed in public-routes.ts but declared '${access}'`);
  if (!listed && access === 'public') throw new PublicRouteMismatch(`${method} ${url} is declared public but not listed in src/server/public-routes.ts`);
}
