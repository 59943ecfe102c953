// Enrollment JWTs: signed (ES256) by the controller's enrollment key, whose public half is served at
// /enroll/jwks under the same kid.
import { randomUUID } from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import type { Ctx } from '../context.js';

export type EnrollMethod = 'ott' | 'ottca' | 'updb' | 'erott' | 'ca';

/** The address clients enroll against: the first configured host name. */
export const controllerUrl = (ctx: Ctx) => `https://${ctx.config.hostnames[0] ?? 'localhost'}:${ctx.config.port}`;

export function signEnrollmentJwt(ctx: Ctx, c: { subject: string; token: string; method: EnrollMethod; expiresAt: Date; caId?: string | null }): Promise<string> {
  const jwt = new SignJWT({ em: c.method, ...(c.caId ? { ca: c.caId } : {}) })
    .setProtectedHeader({ alg: 'ES256', kid: ctx.pki.signingJwk.kid, typ: 'JWT' })
    .setIssuer(controllerUrl(ctx))
    .setSubject(c.subject)
    .setJti(c.token)
    .setIssuedAt(Math.floor(ctx.clock.now().getTime() / 1000))
    .setExpirationTime(Math.floor(c.expiresAt.getTime() / 1000));
  return jwt.sign(ctx.pki.signingKey);
}

/** The one-time token a stored enrollment JWT carries. */
export const tokenOf = (jwt: string): string => String(decodeJwt(jwt).jti ?? '');

/** The audience upstream's enrollment tooling expects on a network JWT. */
export const ENROLLER_AUDIENCE = 'openziti-enroller';

const networkJwts = new WeakMap<Ctx, Promise<string>>();

/**
 * The network's enrollment JWT (method "network"): not a credential, but what a client needs to find
 * and trust this network before enrolling some other way (an external JWT signer, a password): the
 * controller's address (issuer and subject) under the controller's enrollment signature, verifiable
 * against /enroll/jwks. It does not expire, and is made once per process as upstream makes it.
 */
export function networkJwt(ctx: Ctx): Promise<string> {
  let jwt = networkJwts.get(ctx);
  if (!jwt) {
    const url = `${controllerUrl(ctx)}/`;
    jwt = new SignJWT({ em: 'network' })
      .setProtectedHeader({ alg: 'ES256', kid: ctx.pki.signingJwk.kid, typ: 'JWT' })
      .setIssuer(url)
      .setSubject(url)
      .setAudience([ENROLLER_AUDIENCE])
      .setJti(randomUUID())
      .sign(ctx.pki.signingKey);
    networkJwts.set(ctx, jwt);
  }
  return jwt;
}
