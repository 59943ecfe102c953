// The provider's tokens, as upstream makes them (common/oidc_tokens.go, controller/oidc_auth/storage.go):
// JWTs signed with the key of the controller's TLS server certificate (RS256, or ES256/384/512 by curve),
// header kid = SHA-1 hex of that certificate's DER, the same key and kid as enrollment JWTs, so upstream
// routers verify them with the public keys they are sent. Access tokens carry z_t "a" and the API
// session (z_asid) they stand for; refresh tokens z_t "r" with the same custom claims; ID tokens the
// identity's name for the SDKs that show it.
import { createHash, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { decodeJwt, errors as joseErrors, exportJWK, jwtVerify, SignJWT, type JWK, type JWTPayload } from 'jose';
import type { Ctx } from '../../context.js';
import { newId } from '../../ids.js';
import { certificateKid, jwsAlgorithm, MAX_RETIRED_KEY_DAYS, type Pki } from '../../pki/pki.js';
import { fromJson } from '../../../store/json.js';
import { CLIENTS, lifetimes, TOKEN_TYPE } from './settings.js';

/** Upstream's CustomClaims, by their JSON names. */
export interface CustomClaims {
  z_asid: string;
  z_eid?: string;
  z_ia?: boolean;
  z_ct?: string[];
  z_aid?: string;
  z_t: string;
  z_cfs: string[];
  z_acf?: string;
  scopes?: string[];
  z_sdk: Record<string, string> | null;
  z_env: Record<string, string> | null;
  z_ra: string;
  z_ice: boolean;
  z_cae?: boolean;
  z_authid?: string;
  z_cer: boolean;
  z_ckrr: boolean;
  z_iccc: boolean;
}

export type TokenClaims = JWTPayload & CustomClaims & { client_id?: string; amr?: string[]; auth_time?: number; name?: string; nonce?: string };

const ALGORITHMS = ['RS256', 'ES256', 'ES384', 'ES512'];

const seconds = (d: Date | number) => Math.floor((typeof d === 'number' ? d : d.getTime()) / 1000);

function sign(ctx: Ctx, claims: JWTPayload): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: ctx.pki.signingJwk.alg, kid: ctx.pki.signingJwk.kid, typ: 'JWT' }).sign(ctx.pki.signingKey);
}

// --- keys -----------------------------------------------------------------------------------------

interface KeySet {
  at: number;
  /** The signing keys of this process's PKI the set was made from: a renewal replaces the array. */
  own: Pki['signingKeys'];
  keys: Map<string, KeyObject>;
}
const keySets = new WeakMap<Ctx['events'], KeySet>();
/**
 * A kid not in the set is looked for in the database at most this often (a flood of made-up kids costs
 * one read a second); a controller announces a new key ANNOUNCE_MS (3 s) before it signs with it, so
 * the others always look again in time...
 */
const KEYS_FRESH_MS = 1000;
/** ...and the other controllers' keys are read again this often regardless (a key they withdrew goes). */
const KEYS_MAX_AGE_MS = 5 * 60_000;

/**
 * The signing certificates of the other controllers of the database, current and replaced (a renewed
 * controller keeps its previous key published until its tokens expire, model/pki/renewal.ts), as
 * their rows say; replaced ones no longer than MAX_RETIRED_KEY_DAYS.
 */
export async function peerSigningCerts(ctx: Ctx): Promise<{ kid: string; certPem: string; retired: boolean }[]> {
  const rows = await ctx.store.db.selectFrom('controllers').select(['certPem', 'retiredCerts']).execute().catch(() => []);
  const out: { kid: string; certPem: string; retired: boolean }[] = [];
  const oldest = ctx.clock.now().getTime() - MAX_RETIRED_KEY_DAYS * 86_400_000;
  for (const r of rows) {
    const retired = fromJson<{ certPem?: string; retiredAt?: string }[]>(r.retiredCerts, []).filter((c) => typeof c.certPem === 'string' && Date.parse(String(c.retiredAt)) > oldest);
    for (const [pem, old] of [[r.certPem, false], ...retired.map((c) => [c.certPem!, true] as const)] as [string, boolean][]) {
      try {
        out.push({ kid: certificateKid(pem), certPem: pem, retired: old });
      } catch {
        // A certificate that does not parse names no key.
      }
    }
  }
  return out;
}

/**
 * The keys a token from this network may be signed with, by kid: this controller's (its current server
 * key and the replaced ones still published: a token signed before a renewal stays valid until it
 * expires, upstream bug #4116) and those of the other controllers sharing the database (their server
 * certificates, current and replaced).
 */
async function verificationKeys(ctx: Ctx, kid: string): Promise<KeyObject | undefined> {
  let set = keySets.get(ctx.events);
  const own = () => new Map(ctx.pki.signingKeys.map((k) => [k.kid, createPublicKey(k.key)] as const));
  // A renewal (or a withdrawn key) made a new list: the set starts again from it.
  if (!set || set.own !== ctx.pki.signingKeys) {
    set = { at: 0, own: ctx.pki.signingKeys, keys: own() };
    keySets.set(ctx.events, set);
  }
  const age = Date.now() - set.at;
  if ((!set.keys.has(kid) && age > KEYS_FRESH_MS) || age > KEYS_MAX_AGE_MS) {
    const keys = own();
    for (const p of await peerSigningCerts(ctx)) if (!keys.has(p.kid)) keys.set(p.kid, new X509Certificate(p.certPem).publicKey);
    set = { at: Date.now(), own: ctx.pki.signingKeys, keys };
    keySets.set(ctx.events, set);
  }
  return set.keys.get(kid);
}

/**
 * The public keys tokens are signed with, as a JWKS (/oidc/keys), current first: this controller's and
 * those it replaced whose tokens may still be valid, then the other controllers' of the database
 * (upstream publishes its own and its peers').
 */
export async function publicJwks(ctx: Ctx) {
  // An open endpoint: the answer is kept a second (a renewal makes a new list of keys, and a new answer).
  const cached = jwksCache.get(ctx.events);
  if (cached && cached.own === ctx.pki.signingKeys && Date.now() - cached.at < 1000) return cached.jwks;
  const jwks = { keys: await jwksKeys(ctx) };
  jwksCache.set(ctx.events, { at: Date.now(), own: ctx.pki.signingKeys, jwks });
  return jwks;
}
const jwksCache = new WeakMap<Ctx['events'], { at: number; own: Pki['signingKeys']; jwks: { keys: (JWK & { kid: string })[] } }>();

async function jwksKeys(ctx: Ctx) {
  const keys: (JWK & { kid: string })[] = ctx.pki.signingKeys.map((k) => ({ ...k.jwk, use: 'sig' }));
  const seen = new Set(keys.map((k) => k.kid));
  for (const p of await peerSigningCerts(ctx)) {
    if (seen.has(p.kid)) continue;
    seen.add(p.kid);
    const key = new X509Certificate(p.certPem).publicKey;
    keys.push({ ...(await exportJWK(key)), kid: p.kid, alg: jwsAlgorithm(key), use: 'sig' });
  }
  return keys;
}

export class InvalidToken extends Error {}

/**
 * A token this network signed, of the given type (z_t) and for one of the provider's clients, not expired:
 * its claims, or InvalidToken saying why not.
 */
export async function verifyToken(ctx: Ctx, token: string, type: string): Promise<TokenClaims> {
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(
      token,
      async (header) => {
        const key = header.kid ? await verificationKeys(ctx, header.kid) : undefined;
        if (!key) throw new InvalidToken('the token is not signed by a key of this network');
        return key;
      },
      { algorithms: ALGORITHMS, currentDate: ctx.clock.now(), requiredClaims: ['exp'] },
    ));
  } catch (e) {
    if (e instanceof InvalidToken) throw e;
    if (e instanceof joseErrors.JWTExpired) throw new InvalidToken('the token has expired');
    throw new InvalidToken('the token is not valid');
  }
  const claims = payload as TokenClaims;
  if (claims.z_t !== type) throw new InvalidToken(`the token is not ${type === TOKEN_TYPE.access ? 'an access' : type === TOKEN_TYPE.refresh ? 'a refresh' : 'the expected'} token`);
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.some((a) => (CLIENTS as readonly (string | undefined)[]).includes(a))) throw new InvalidToken('the token is for another audience');
  if (typeof claims.z_asid !== 'string' || !claims.z_asid || typeof claims.sub !== 'string') throw new InvalidToken('the token names no API session');
  return claims;
}

/** Whether a bearer value is a JWT (three base64url parts), not a zt-session token or an API token. */
export const looksLikeJwt = (token: string) => /^ey[\w-]*\.[\w-]+\.[\w-]+$/.test(token);

/** The claims of a JWT without checking it (for messages and end_session hints), or undefined. */
export function peek(token: string): TokenClaims | undefined {
  try {
    return decodeJwt(token) as TokenClaims;
  } catch {
    return undefined;
  }
}

// --- issuing --------------------------------------------------------------------------------------

export interface Issue {
  issuer: string;
  clientId: string;
  subject: string;
  audience: string[];
  scopes: string[];
  amr: string[];
  authTime: Date;
  custom: CustomClaims;
  identity: { name: string; isAdmin: boolean; externalId: string | null };
  nonce?: string;
}

/** An access token (30 min by default): the API session as a bearer credential. */
export async function accessToken(ctx: Ctx, t: Issue): Promise<{ token: string; jti: string; expiresAt: Date }> {
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + lifetimes(ctx).accessMs);
  const jti = newId(22);
  const custom: CustomClaims = { ...t.custom, z_t: TOKEN_TYPE.access, z_ia: t.identity.isAdmin, scopes: t.scopes, ...(t.identity.externalId ? { z_eid: t.identity.externalId } : {}) };
  if (!t.identity.externalId) delete custom.z_eid;
  const token = await sign(ctx, {
    ...custom,
    amr: t.amr,
    auth_time: seconds(t.authTime),
    iss: t.issuer, sub: t.subject, aud: t.audience, jti, iat: seconds(now), nbf: seconds(now), exp: seconds(expiresAt),
    client_id: t.clientId, scope: t.scopes.join(' '),
  });
  return { token, jti, expiresAt };
}

/** A refresh token (24 h by default): carries the session's claims to the next access token. */
export async function refreshToken(ctx: Ctx, t: Issue): Promise<{ token: string; jti: string; expiresAt: Date }> {
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + lifetimes(ctx).refreshMs);
  const jti = newId(22);
  const token = await sign(ctx, {
    ...t.custom,
    z_t: TOKEN_TYPE.refresh,
    scopes: t.scopes,
    amr: t.amr,
    auth_time: seconds(t.authTime),
    iss: t.issuer, sub: t.subject, aud: t.audience, jti, iat: seconds(now), nbf: seconds(now), exp: seconds(expiresAt),
    client_id: t.clientId, azp: t.clientId,
  });
  return { token, jti, expiresAt };
}

/** The left half of the hash of a value, as at_hash is made (OIDC Core 3.1.3.6), for the key's algorithm. */
function halfHash(alg: string, value: string): string {
  const bits = alg.endsWith('512') ? 'sha512' : alg.endsWith('384') ? 'sha384' : 'sha256';
  const digest = createHash(bits).update(value).digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

/** An ID token: who logged in (sub, name, z_ia, z_eid), for the client; never a credential here. */
export async function idToken(ctx: Ctx, t: Issue, accessTokenValue?: string): Promise<string> {
  const now = ctx.clock.now();
  return sign(ctx, {
    iss: t.issuer, sub: t.subject, aud: [t.clientId], iat: seconds(now), exp: seconds(now.getTime() + lifetimes(ctx).idMs),
    auth_time: seconds(t.authTime), amr: t.amr, azp: t.clientId, client_id: t.clientId,
    ...(t.nonce ? { nonce: t.nonce } : {}),
    ...(accessTokenValue ? { at_hash: halfHash(ctx.pki.signingJwk.alg, accessTokenValue) } : {}),
    name: t.identity.name, z_ia: t.identity.isAdmin,
    ...(t.identity.externalId ? { z_eid: t.identity.externalId } : {}),
    z_asid: t.custom.z_asid,
  });
}
