// The OIDC provider's fixed parts: its two public clients, the redirect URIs they may use, the tokens'
// lifetimes, and its issuer (upstream controller/oidc_auth: provider.go, client.go, webapis/oidc-api.go).
import type { Ctx } from '../../context.js';
import { OidcError } from './errors.js';

export const OIDC_PATH = '/oidc';

/** Both are public native clients (no secret: PKCE proves the code's requester); `native` is the early SDKs' name. */
export const CLIENTS = ['openziti', 'native'] as const;
export type ClientId = (typeof CLIENTS)[number];

export const isClient = (id: unknown): id is ClientId => typeof id === 'string' && (CLIENTS as readonly string[]).includes(id);

/** Token types (z_t), as upstream's common/oidc_tokens.go. */
export const TOKEN_TYPE = { access: 'a', refresh: 'r', totp: 't', service: 's' } as const;

/** RFC 8693 token type identifiers. */
export const URN = {
  access: 'urn:ietf:params:oauth:token-type:access_token',
  refresh: 'urn:ietf:params:oauth:token-type:refresh_token',
  id: 'urn:ietf:params:oauth:token-type:id_token',
  jwt: 'urn:ietf:params:oauth:token-type:jwt',
} as const;
export const GRANT = {
  code: 'authorization_code',
  refresh: 'refresh_token',
  exchange: 'urn:ietf:params:oauth:grant-type:token-exchange',
} as const;

/** The scopes the provider knows; others asked for are dropped, as upstream's clients allow no custom scopes. */
export const SCOPES = ['openid', 'offline_access'] as const;

/** An authorization request must reach its code within this; a code must be exchanged within CODE_TTL_MS. */
export const AUTH_REQUEST_TTL_MS = 10 * 60_000;
export const CODE_TTL_MS = 60_000;

export const lifetimes = (ctx: Ctx) => ({
  accessMs: ctx.config.oidcAccessTokenMinutes * 60_000,
  refreshMs: ctx.config.oidcRefreshTokenMinutes * 60_000,
  idMs: ctx.config.oidcIdTokenMinutes * 60_000,
});

/** The longest any token lives: how long a revocation must outlive the tokens it names. */
export const longestTokenMs = (ctx: Ctx) => Math.max(...Object.values(lifetimes(ctx)));

// The default redirect URIs (upstream webapis/oidc-api.go): the SDKs' local callbacks. Matched on the
// URI as sent, character by character, so no parser difference (userinfo, backslashes, encodings) can
// turn an allowed URI into another host.
const DEFAULT_REDIRECTS = [/^openziti:\/\/auth\/callback$/, /^https?:\/\/(localhost|127\.0\.0\.1)(:\d{1,5})?\/auth\/callback$/];

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A configured redirect URI as a pattern: exact, but `:*` (before the path) stands for any port. */
const configured = (uri: string) => new RegExp(`^${escapeRegex(uri).replace(/:\\\*(?=\/|$)/, '(:\\d{1,5})?')}$`);

export function isAllowedRedirect(ctx: Ctx, uri: unknown): uri is string {
  if (typeof uri !== 'string' || !uri || uri.length > 2048) return false;
  return [...DEFAULT_REDIRECTS, ...ctx.config.oidcRedirectUris.map(configured)].some((r) => r.test(uri));
}

/**
 * The issuer: https://HOST:PORT/oidc for the host the client reached us at when it is one of ours (the
 * C SDK takes every endpoint from the discovery document, so they must name an address it can reach),
 * else the advertised API address. Upstream likewise keeps one issuer per address it serves.
 */
export function issuerFor(ctx: Ctx, host: string | undefined): string {
  const advertised = ctx.config.apiAddress || `${ctx.config.hostnames[0] ?? 'localhost'}:${ctx.config.port}`;
  if (host && /^[a-z0-9.\-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i.test(host)) {
    const name = host.replace(/:\d+$/, '').replace(/^\[|\]$/g, '').toLowerCase();
    const names = new Set([...ctx.config.hostnames.map((h) => h.toLowerCase()), 'localhost', '127.0.0.1', '::1', advertised.replace(/:\d+$/, '').toLowerCase()]);
    if (names.has(name)) return `https://${host.toLowerCase()}${OIDC_PATH}`;
  }
  return `https://${advertised}${OIDC_PATH}`;
}

/** The scopes asked for that the provider knows, or an error when openid is missing. */
export function requestedScopes(scope: unknown): string[] {
  const asked = typeof scope === 'string' ? scope.split(/\s+/).filter(Boolean) : [];
  if (!asked.includes('openid')) throw new OidcError(400, 'invalid_scope', 'The scope openid is missing in the request');
  return SCOPES.filter((s) => asked.includes(s));
}
