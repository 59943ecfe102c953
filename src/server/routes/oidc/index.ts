// The OIDC provider's HTTP surface under /oidc (upstream controller/oidc_auth provider.go newHttpRouter,
// login.go createRouter): discovery (also at the root), authorize, the login steps, token, introspect,
// userinfo, revoke, end_session and keys. The flows and tokens are model/auth/oidc/; this file only reads
// requests (JSON or form bodies, the TLS client certificate, Basic auth) and shapes the answers: 302s
// where the clients follow redirects, auth-request-id and totp-required headers where they read them.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, unauthorized } from '../../../model/errors.js';
import type { Ctx } from '../../../model/context.js';
import { presentedCertificates } from '../../../model/pki/client-certs.js';
import { authorizationOf } from '../../plugins/auth.js';
import { loginFailed } from '../../../model/events/emit.js';
import { checkAccessToken } from '../../../model/auth/oidc/bearer.js';
import { OidcError } from '../../../model/auth/oidc/errors.js';
import { endSession, introspect, revokeToken, tokenRequest, userinfo } from '../../../model/auth/oidc/grants.js';
import {
  authQueries, createAuthRequest, deleteTotpEnroll, getAuthRequest, isDone, issueCode, loginRequest, needsTotp, RedirectError, requestIdOf,
  startTotpEnroll, verifyTotp, verifyTotpEnroll, type AuthRequest, type LoginInput, type LoginMethod,
} from '../../../model/auth/oidc/requests.js';
import { GRANT, issuerFor, OIDC_PATH, SCOPES } from '../../../model/auth/oidc/settings.js';
import { InvalidToken, publicJwks } from '../../../model/auth/oidc/tokens.js';

const pub = { access: 'public' as const };
type Body = Record<string, unknown>;

/** Form fields as upstream's login reads them (OidcUpdbCreds.Translate): envArch, sdkAppId, ... any case. */
const ENV_FIELDS = ['arch', 'os', 'osRelease', 'osVersion', 'domain', 'hostname'];
const SDK_FIELDS = ['appId', 'appVersion', 'branch', 'revision', 'type', 'version'];

function parseForm(text: string): Body {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(text)) {
    const had = out[k];
    out[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  return out;
}

const first = (v: unknown): string | undefined => (typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : undefined);
const info = (v: unknown): Record<string, string> | undefined => {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) if (typeof x === 'string' && k.length <= 32) out[k] = x.slice(0, 255);
  return Object.keys(out).length ? out : undefined;
};

/** The body of a request as JSON or a form; anything else is 415, as upstream's negotiateBodyContentType. */
function bodyOf(req: FastifyRequest): Body {
  const type = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (req.body === undefined || req.body === null) return {};
  if (type !== 'application/json' && type !== 'application/x-www-form-urlencoded') {
    throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `the content type: ${type}, is not supported (supported: application/x-www-form-urlencoded, application/json)`);
  }
  if (typeof req.body !== 'object' || Array.isArray(req.body)) throw new ApiError(400, 'COULD_NOT_PARSE_BODY', 'The body must be an object');
  return req.body as Body;
}

/** A login body (JSON: upstream's Authenticate; form: the Go SDK's fields) as the model's input. */
function loginInput(b: Body): LoginInput {
  const fromForm = (prefix: string, fields: string[]) => {
    const lower = new Map(Object.entries(b).map(([k, v]) => [k.toLowerCase(), v]));
    const out: Record<string, string> = {};
    for (const f of fields) {
      const v = first(lower.get(`${prefix}${f}`.toLowerCase()));
      if (v) out[f] = v.slice(0, 255);
    }
    return Object.keys(out).length ? out : undefined;
  };
  const configTypes = ([] as unknown[]).concat(b.configTypes ?? []).filter((x): x is string => typeof x === 'string' && x.length <= 255);
  const username = first(b.username);
  const password = first(b.password);
  return {
    ...(username !== undefined ? { username: username.slice(0, 1024) } : {}),
    ...(password !== undefined ? { password: password.slice(0, 1024) } : {}),
    ...(configTypes.length ? { configTypes: configTypes.slice(0, 100) } : {}),
    envInfo: info(b.envInfo) ?? fromForm('env', ENV_FIELDS),
    sdkInfo: info(b.sdkInfo) ?? fromForm('sdk', SDK_FIELDS),
    csrPem: first(b.csrPem) ?? first(b.csr_pem),
  };
}

const wantsHtml = (req: FastifyRequest) => {
  const accept = String(req.headers.accept ?? '');
  return /text\/html/.test(accept) && !/application\/json/.test(accept.split(',')[0] ?? '');
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head><body style="font-family:sans-serif;max-width:28em;margin:3em auto">${body}</body></html>`;
}

function loginPage(id: string, error?: string) {
  return page(
    'Log in',
    `<h1>Log in</h1>${error ? `<p style="color:#b00">${escapeHtml(error)}</p>` : ''}<form method="post" action="${OIDC_PATH}/login/password"><input type="hidden" name="id" value="${escapeHtml(id)}"><p><label>Username <input name="username" autocomplete="username" autofocus></label></p><p><label>Password <input name="password" type="password" autocomplete="current-password"></label></p><p><button>Log in</button></p></form>`,
  );
}

function totpPage(id: string, error?: string) {
  return page(
    'One-time code',
    `<h1>One-time code</h1>${error ? `<p style="color:#b00">${escapeHtml(error)}</p>` : ''}<form method="post" action="${OIDC_PATH}/login/totp"><input type="hidden" name="id" value="${escapeHtml(id)}"><p><label>Code <input name="code" inputmode="numeric" autocomplete="one-time-code" autofocus></label></p><p><button>Continue</button></p></form>`,
  );
}

/** The next step of a logged-in request: its code (through the callback), or what it still owes. */
async function next(ctx: Ctx, reply: FastifyReply, req: FastifyRequest, r: AuthRequest) {
  if (isDone(r)) return reply.redirect(`${OIDC_PATH}/authorize/callback?id=${encodeURIComponent(r.id)}`, 302);
  if (needsTotp(r)) reply.header('totp-required', 'true');
  // A browser can type a TOTP code; the external provider's JWT comes from the client (POST /oidc/login/ext-jwt).
  if (wantsHtml(req) && needsTotp(r)) return reply.type('text/html; charset=utf-8').send(totpPage(r.id));
  return reply.code(200).send({ authQueries: await authQueries(ctx, r) });
}

/** An OAuth error as its endpoint answers it: JSON {error, error_description}, or a redirect to the client. */
function oauthError(reply: FastifyReply, e: unknown) {
  if (e instanceof RedirectError) return reply.redirect(e.location, 302);
  if (e instanceof OidcError) {
    if (e.status === 401) reply.header('www-authenticate', 'Basic realm="openziti-oidc"');
    return reply.code(e.status).header('cache-control', 'no-store').send(e.toJSON());
  }
  throw e;
}

function basicAuth(req: FastifyRequest): { id: string; secret: string } | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string' || !/^basic /i.test(h)) return undefined;
  // The C SDK encodes with the URL-safe alphabet; Buffer reads both.
  const text = Buffer.from(h.slice(6).trim(), 'base64').toString('utf8');
  const at = text.indexOf(':');
  if (at < 0) return undefined;
  const dec = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      return s;
    }
  };
  return { id: dec(text.slice(0, at)), secret: dec(text.slice(at + 1)) };
}

const fieldsOf = (b: Body): Record<string, string | undefined> => Object.fromEntries(Object.entries(b).map(([k, v]) => [k, first(v)]));

export function discovery(ctx: Ctx, host: string | undefined) {
  const iss = issuerFor(ctx, host);
  return {
    issuer: iss,
    authorization_endpoint: `${iss}/authorize`,
    token_endpoint: `${iss}/oauth/token`,
    introspection_endpoint: `${iss}/oauth/introspect`,
    userinfo_endpoint: `${iss}/userinfo`,
    revocation_endpoint: `${iss}/revoke`,
    end_session_endpoint: `${iss}/end_session`,
    jwks_uri: `${iss}/keys`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [GRANT.code, GRANT.refresh, GRANT.exchange],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [ctx.pki.signingJwk.alg],
    request_object_signing_alg_values_supported: [ctx.pki.signingJwk.alg],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
    introspection_endpoint_auth_methods_supported: ['none', 'client_secret_basic'],
    code_challenge_methods_supported: ['S256'],
    claims_supported: ['sub', 'aud', 'exp', 'iat', 'iss', 'auth_time', 'nonce', 'amr', 'azp', 'at_hash', 'name', 'z_ia', 'z_eid', 'z_asid'],
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    ui_locales_supported: ['en'],
    openziti_endpoints: {
      password: `${iss}/login/password`,
      cert: `${iss}/login/cert`,
      ext_jwt: `${iss}/login/ext-jwt`,
      totp: `${iss}/login/totp`,
      totp_enroll: `${iss}/login/totp/enroll`,
      totp_enroll_verify: `${iss}/login/totp/enroll/verify`,
      auth_queries: `${iss}/login/auth-queries`,
    },
  };
}

/** The provider's routes (when config.oidc): all public, each checking its own credential. */
export async function registerOidc(app: FastifyInstance, ctx: Ctx) {
  await app.register(async (o) => {
    o.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 256 * 1024 }, (_req, body, done) => done(null, parseForm(String(body))));
    const tags = ['OIDC'];
    const hidden = { hide: true, tags };

    for (const url of ['/.well-known/openid-configuration', `${OIDC_PATH}/.well-known/openid-configuration`]) {
      o.get(url, { config: pub, schema: hidden }, async (req) => discovery(ctx, req.headers.host));
    }
    o.get(`${OIDC_PATH}/keys`, { config: pub, schema: hidden }, async (_req, reply) => reply.header('cache-control', 'max-age=300').send(await publicJwks(ctx)));

    // authorize: GET (the Go SDK, browsers) or POST (the C SDK, parameters in the query): 302 to the login.
    const authorize = async (req: FastifyRequest, reply: FastifyReply) => {
      const params = { ...(req.query as Body), ...(req.method === 'POST' && String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded') ? (req.body as Body) : {}) };
      try {
        const made = await createAuthRequest(ctx, params, { remoteAddress: req.ip, hasPeerCert: presentedCertificates(req.raw.socket).length > 0 });
        return reply.redirect(made.loginPath, 302);
      } catch (e) {
        if (e instanceof OidcError && !(e instanceof RedirectError)) return reply.code(e.status).send(e.toJSON());
        return oauthError(reply, e);
      }
    };
    o.get(`${OIDC_PATH}/authorize`, { config: pub, schema: hidden }, authorize);
    o.post(`${OIDC_PATH}/authorize`, { config: pub, schema: hidden }, authorize);
    o.get(`${OIDC_PATH}/authorize/callback`, { config: pub, schema: hidden }, async (req, reply) => {
      try {
        return reply.redirect(await issueCode(ctx, (req.query as Body).id), 302);
      } catch (e) {
        return oauthError(reply, e);
      }
    });

    // The login pages: GET answers 200 with the request's id in auth-request-id (the Go SDK reads it there).
    const methods: [string, LoginMethod][] = [['password', 'password'], ['username', 'password'], ['cert', 'cert'], ['ext-jwt', 'ext-jwt']];
    for (const [path, method] of methods) {
      o.get(`${OIDC_PATH}/login/${path}`, { config: pub, schema: hidden }, async (req, reply) => {
        const q = req.query as Body;
        const id = first(q.authRequestID) ?? first(q.id) ?? '';
        reply.header('auth-request-id', id);
        if (method === 'password') return reply.type('text/html; charset=utf-8').send(loginPage(id));
        return reply.type('text/plain; charset=utf-8').send('please POST to this URL');
      });
      o.post(`${OIDC_PATH}/login/${path}`, { config: pub, schema: hidden }, async (req, reply) => {
        const body = bodyOf(req);
        const input = loginInput(body);
        const id = requestIdOf(body, req.query as Body);
        let r: AuthRequest;
        try {
          r = await loginRequest(ctx, id, method, input, req.ip, presentedCertificates(req.raw.socket), authorizationOf(req));
        } catch (e) {
          loginFailed(ctx, method, e, req.ip, { username: input.username });
          if (wantsHtml(req) && method === 'password' && e instanceof ApiError && id) {
            return reply.code(e.status).type('text/html; charset=utf-8').send(loginPage(id, e.message));
          }
          throw e;
        }
        return next(ctx, reply, req, r);
      });
    }

    o.get(`${OIDC_PATH}/login/auth-queries`, { config: pub, schema: hidden }, async (req, reply) => {
      const r = await getAuthRequest(ctx, first((req.query as Body).id) ?? first((req.query as Body).authRequestID));
      if (needsTotp(r)) reply.header('totp-required', 'true');
      return { authQueries: await authQueries(ctx, r) };
    });

    o.post(`${OIDC_PATH}/login/totp`, { config: pub, schema: hidden }, async (req, reply) => {
      const body = bodyOf(req);
      const id = requestIdOf(body, req.query as Body);
      let r: AuthRequest;
      try {
        r = await verifyTotp(ctx, id, first(body.code));
      } catch (e) {
        if (wantsHtml(req) && e instanceof ApiError && id && e.status === 400) return reply.code(400).type('text/html; charset=utf-8').send(totpPage(id, e.message));
        throw e;
      }
      return next(ctx, reply, req, r);
    });
    o.post(`${OIDC_PATH}/login/totp/enroll`, { config: pub, schema: hidden }, async (req, reply) => {
      const body = bodyOf(req);
      const m = await startTotpEnroll(ctx, requestIdOf(body, req.query as Body));
      return reply.code(201).send({ id: m.id, createdAt: m.createdAt, updatedAt: m.updatedAt, tags: m.tags, isVerified: m.isVerified, provisioningUrl: m.provisioningUrl, recoveryCodes: m.recoveryCodes });
    });
    o.delete(`${OIDC_PATH}/login/totp/enroll`, { config: pub, schema: hidden }, async (req) => {
      const body = bodyOf(req);
      await deleteTotpEnroll(ctx, requestIdOf(body, req.query as Body), first(body.code) ?? first((req.query as Body).code));
      return {};
    });
    o.post(`${OIDC_PATH}/login/totp/enroll/verify`, { config: pub, schema: hidden }, async (req, reply) => {
      const body = bodyOf(req);
      return next(ctx, reply, req, await verifyTotpEnroll(ctx, requestIdOf(body, req.query as Body), first(body.code)));
    });

    o.post(`${OIDC_PATH}/oauth/token`, { config: pub, schema: hidden }, async (req, reply) => {
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      try {
        const form = fieldsOf(bodyOf(req));
        return await tokenRequest(ctx, { form, basic: basicAuth(req), issuer: issuerFor(ctx, req.headers.host), ipAddress: req.ip, presented: presentedCertificates(req.raw.socket) });
      } catch (e) {
        return oauthError(reply, e);
      }
    });
    o.post(`${OIDC_PATH}/oauth/introspect`, { config: pub, schema: hidden }, async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return introspect(ctx, first(bodyOf(req).token));
    });
    o.post(`${OIDC_PATH}/revoke`, { config: pub, schema: hidden }, async (req, reply) => {
      try {
        const form = fieldsOf(bodyOf(req));
        await revokeToken(ctx, form.token, { form, basic: basicAuth(req) });
        return reply.code(200).send({});
      } catch (e) {
        return oauthError(reply, e);
      }
    });
    const info = async (req: FastifyRequest) => {
      const h = req.headers.authorization;
      const token = typeof h === 'string' && /^bearer /i.test(h) ? h.slice(7).trim() : '';
      try {
        return await userinfo(ctx, await checkAccessToken(ctx, token));
      } catch (e) {
        if (e instanceof InvalidToken) throw unauthorized(`The access token is not accepted: ${e.message}`);
        throw e;
      }
    };
    o.get(`${OIDC_PATH}/userinfo`, { config: pub, schema: hidden }, info);
    o.post(`${OIDC_PATH}/userinfo`, { config: pub, schema: hidden }, info);
    const end = async (req: FastifyRequest, reply: FastifyReply) => {
      const p = { ...(req.query as Body), ...(req.method === 'POST' ? bodyOf(req) : {}) };
      await endSession(ctx, first(p.id_token_hint));
      // A post-logout redirect only to an allowed redirect URI; otherwise the provider's own page.
      return reply.redirect(`${OIDC_PATH}/logged-out`, 302);
    };
    o.get(`${OIDC_PATH}/end_session`, { config: pub, schema: hidden }, end);
    o.post(`${OIDC_PATH}/end_session`, { config: pub, schema: hidden }, end);
    o.get(`${OIDC_PATH}/logged-out`, { config: pub, schema: hidden }, async (_req, reply) => reply.type('text/plain; charset=utf-8').send('signed out successfully'));
  });
}

