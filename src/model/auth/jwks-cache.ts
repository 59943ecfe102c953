// The key sets of JWKS signers, fetched through the guarded fetch and kept per URL: fetched again when
// a token names a key the set lacks (a provider rotating keys), at most once per cooldown, so a flood
// of tokens with made-up key ids cannot turn into a flood of fetches.
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { fetchJwks, JwksFetchError } from './jwks-fetch.js';

const COOLDOWN_MS = 1_000;
/** Keys older than this are fetched again even when they still match (a revoked key must go away). */
const MAX_AGE_MS = 10 * 60_000;
const MAX_SETS = 1_000;

interface Held {
  jwks: JSONWebKeySet;
  verify: JWTVerifyGetKey;
  /** performance.now() of the fetch: cache freshness, not a budget, so real elapsed time is what counts. */
  at: number;
}

const sets = new Map<string, Held>();
const pending = new Map<string, Promise<Held>>();

function isKeySet(v: unknown): v is JSONWebKeySet {
  return !!v && typeof v === 'object' && Array.isArray((v as { keys?: unknown }).keys);
}

// Keyed by the allowed hosts too: controllers in one process (tests) may be configured differently.
const keyOf = (url: string, allowedPrivateHosts: string[]) => `${allowedPrivateHosts.join(',')} ${url}`;

async function load(url: string, allowedPrivateHosts: string[]): Promise<Held> {
  const key = keyOf(url, allowedPrivateHosts);
  let p = pending.get(key);
  if (!p) {
    p = fetchJwks(url, allowedPrivateHosts)
      .then((body) => {
        if (!isKeySet(body)) throw new JwksFetchError(`${url} did not answer a key set ({"keys": [...]})`);
        const held = { jwks: body, verify: createLocalJWKSet(body), at: performance.now() };
        sets.delete(key);
        sets.set(key, held);
        if (sets.size > MAX_SETS) sets.delete(sets.keys().next().value as string);
        return held;
      })
      .finally(() => pending.delete(key));
    pending.set(key, p);
  }
  return p;
}

/** The key set at `url`, as of the last fetch (fetched now when never fetched or stale). */
export async function keySet(url: string, allowedPrivateHosts: string[]): Promise<Held> {
  const held = sets.get(keyOf(url, allowedPrivateHosts));
  if (held && performance.now() - held.at < MAX_AGE_MS) return held;
  return load(url, allowedPrivateHosts);
}

/** A key resolver for jwtVerify: the cached set, fetched again once when the token's kid is not in it. */
export function remoteKeys(url: string, allowedPrivateHosts: string[]): JWTVerifyGetKey {
  return async (header, token) => {
    const held = await keySet(url, allowedPrivateHosts);
    try {
      return await held.verify(header, token);
    } catch (e) {
      if (!(e instanceof errors.JWKSNoMatchingKey) || performance.now() - held.at < COOLDOWN_MS) throw e;
      return (await load(url, allowedPrivateHosts)).verify(header, token);
    }
  };
}
