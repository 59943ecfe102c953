// Enrollment JWTs: signed with the key of the controller's TLS server certificate (RS256 for RSA, ES256/
// ES384 for EC), kid = SHA-1 of that certificate, as upstream: the C and Go SDKs and upstream's router
// verify the signature with the certificate they see on the TLS handshake. The public half is also
// served at /enroll/jwks under the same kid.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, SignJWT, type JWTPayload } from 'jose';
import { advertisedApiUrl } from '../../config.js';
import type { Ctx } from '../context.js';
import { fromJson } from '../../store/json.js';
import { readControllerId } from '../resources/controllers.js';

export type EnrollMethod = 'ott' | 'ottca' | 'updb' | 'erott' | 'trott' | 'ca';

/** The address clients enroll against: the first configured host name. */
/** The advertised API address (config apiAddress, as upstream's edge.api.address): the issuer of every enrollment JWT. */
export const controllerUrl = (ctx: Ctx) => advertisedApiUrl(ctx.config);

/**
 * A updb JWT also names the username the administrator chose (our extension: SDKs ignore it), so
 * `ztc enroll` can say what to log in with.
 */
export function signEnrollmentJwt(ctx: Ctx, c: { subject: string; token: string; method: EnrollMethod; expiresAt: Date; caId?: string | null; username?: string | null }): Promise<string> {
  const jwt = new SignJWT({ em: c.method, ...(c.caId ? { ca: c.caId } : {}), ...(c.method === 'updb' && c.username ? { username: c.username } : {}) })
    .setProtectedHeader(header(ctx))
    .setIssuer(controllerUrl(ctx))
    .setSubject(c.subject)
    .setJti(c.token)
    .setIssuedAt(Math.floor(ctx.clock.now().getTime() / 1000))
    .setExpirationTime(Math.floor(c.expiresAt.getTime() / 1000));
  return jwt.sign(ctx.pki.signingKey);
}

const header = (ctx: Ctx) => ({ alg: ctx.pki.signingJwk.alg, kid: ctx.pki.signingJwk.kid, typ: 'JWT' });

/** How long a service session JWT is valid: a year, as upstream (the API session bounds it in practice). */
const SERVICE_SESSION_DAYS = 365;

/**
 * A service session's token (POST /sessions), as upstream 2.x makes it (ctrl-channel-2.x.md section 3,
 * common.ServiceAccessClaims): a JWT signed with the key of the controller's server certificate (kid =
 * its SHA-1), which 2.x routers verify themselves with the key the router data model gives them, then
 * check z_t "s", z_st Dial or Bind and z_asid against the API session of the connecting SDK. z_leg:
 * the session is stored (legacy authentication); jti is its id. To everything else (the embedded router,
 * 1.x routers, SDKs) it is an opaque string, stored hashed like any token.
 */
export function signServiceSessionJwt(ctx: Ctx, s: { id: string; apiSessionId: string; identityId: string; serviceId: string; type: 'Dial' | 'Bind' }): Promise<string> {
  const now = Math.floor(ctx.clock.now().getTime() / 1000);
  return new SignJWT({ z_asid: s.apiSessionId, z_iid: s.identityId, z_t: 's', z_st: s.type, z_leg: true })
    .setProtectedHeader(header(ctx))
    .setIssuer(controllerUrl(ctx))
    .setSubject(s.serviceId)
    .setAudience(['openziti'])
    .setJti(s.id)
    .setIssuedAt(now)
    .setExpirationTime(now + SERVICE_SESSION_DAYS * 86_400)
    .sign(ctx.pki.signingKey);
}

/** The one-time token a stored enrollment JWT carries. */
export const tokenOf = (jwt: string): string => String(decodeJwt(jwt).jti ?? '');

/** The audience upstream's enrollment tooling expects on a network JWT. */
export const ENROLLER_AUDIENCE = 'openziti-enroller';

// Keyed by the controller's event hub, which the per-request copies of the context share (server/actor.ts).
const networkJwts = new WeakMap<Ctx['events'], Promise<string>>();

/**
 * The network's enrollment JWT (method "network"): not a credential, but what a client needs to find
 * and trust this network before enrolling some other way (an external JWT signer, a password): the
 * controller's address (issuer and subject) under the controller's enrollment signature, verifiable
 * against /enroll/jwks. It does not expire, and is made once per process as upstream makes it.
 */
export function networkJwt(ctx: Ctx): Promise<string> {
  let jwt = networkJwts.get(ctx.events);
  if (!jwt) {
    const url = `${controllerUrl(ctx)}/`;
    jwt = new SignJWT({ em: 'network' })
      .setProtectedHeader(header(ctx))
      .setIssuer(url)
      .setSubject(url)
      .setAudience([ENROLLER_AUDIENCE])
      .setJti(randomUUID())
      .sign(ctx.pki.signingKey);
    networkJwts.set(ctx.events, jwt);
  }
  return jwt;
}

/** A renewed server key signs the network JWT anew (the next networkJwt call makes it). */
export function forgetNetworkJwt(ctx: Ctx) {
  networkJwts.delete(ctx.events);
}

/** The API origins the other controllers of this database registered (model/resources/controllers.ts). */
async function otherControllersUrls(ctx: Ctx): Promise<Set<string>> {
  const me = readControllerId(ctx.config.dataDir);
  const rows = await ctx.store.db.selectFrom('controllers').select(['id', 'apiAddresses']).execute();
  const out = new Set<string>();
  for (const r of rows) {
    if (r.id === me) continue;
    for (const list of Object.values(fromJson<Record<string, { url: string }[]>>(r.apiAddresses, {}))) {
      for (const a of list ?? []) {
        try {
          out.add(new URL(a.url).origin);
        } catch {
          // A malformed address names nobody.
        }
      }
    }
  }
  return out;
}

/** Where the kid that signed every stored enrollment JWT is noted, so a start knows whether to re-sign. */
const SIGNED_WITH = 'enrollment-jwts.kid';

/**
 * Re-sign the stored enrollment JWTs that another key signed (the server certificate was renewed): same
 * claims and token, the current key. Returns how many changed. The old JWTs' tokens keep working
 * through the API, but SDKs check the signature against the certificate they see, so hand out the new ones.
 */
export async function reissueEnrollmentJwts(ctx: Ctx): Promise<number> {
  const marker = path.join(ctx.config.dataDir, 'pki', SIGNED_WITH);
  const kid = ctx.pki.signingJwk.kid;
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8').trim() === kid) return 0;
  let changed = 0;
  let after = '';
  // Another controller's JWTs (several on one database) are checked against its certificate, not ours:
  // theirs stay as they are. One whose issuer names no other controller is ours (under an address
  // this controller had before, say) and is re-signed.
  const others = await otherControllersUrls(ctx);
  for (;;) {
    const page = await ctx.store.db.selectFrom('enrollments').select(['id', 'jwt']).where('id', '>', after).orderBy('id').limit(500).execute();
    if (!page.length) break;
    after = page[page.length - 1].id;
    for (const row of page) {
      const old = ctx.sealer.open(row.jwt);
      if (decodeProtectedHeader(old).kid === kid) continue;
      const claims: JWTPayload = decodeJwt(old);
      const issuer = String(claims.iss ?? '').replace(/\/+$/, '');
      if (issuer !== controllerUrl(ctx) && others.has(issuer)) continue;
      const fresh = await new SignJWT({ ...claims }).setProtectedHeader(header(ctx)).sign(ctx.pki.signingKey);
      await ctx.store.db.updateTable('enrollments').set({ jwt: ctx.sealer.seal(fresh) }).where('id', '=', row.id).execute();
      changed++;
    }
  }
  fs.writeFileSync(marker, kid + '\n');
  return changed;
}
