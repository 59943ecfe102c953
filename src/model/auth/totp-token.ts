// POST /current-api-session/totp-token (2.x edge API): a TOTP code of the caller's enrolled MFA, checked
// as every MFA code is (one use per time step, the identity's budget of wrong codes), becomes a signed
// JWT that proves when the check passed. Routers and SDKs present it for MFA posture checks when the
// API session is an OIDC one (upstream's CurrentSessionRouter.CreateTotpToken and
// AppEnv.CreateTotpTokenFromAccessClaims, controller v2.0.3): z_t "t", the access token's subject,
// audience and API session (z_asid), issued by the controller's root issuer, signed with the key that
// signs the access tokens. As upstream, only an API session carried by an access token gets one.
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';
import { controllerUrl } from '../pki/jwt.js';
import { isSet } from '../../store/json.js';
import { checkCode, getMfa, invalidCode } from './mfa.js';
import { checkAccessToken } from './oidc/bearer.js';
import { looksLikeJwt } from './oidc/tokens.js';

/** Upstream's token type claim (z_t) of a TOTP token (common/oidc_tokens.go TokenTypeTotp). */
export const TOTP_TOKEN_TYPE = 't';

/** The controller's root issuer, as upstream's RootIssuer: its API address, without the OIDC path. */
const rootIssuer = (ctx: Ctx) => controllerUrl(ctx).replace(/\/+$/, '');

export async function createTotpToken(ctx: Ctx, caller: { identityId: string; token: string }, code: unknown): Promise<{ token: string; issuedAt: string }> {
  if (!looksLikeJwt(caller.token)) {
    throw new ApiError(400, 'INVALID_BACKING_TOKEN_TYPE', 'The backing token type is invalid: TOTP tokens are issued to API sessions of an OIDC access token (Authorization: Bearer), as upstream issues them; a zt-session API session proves MFA by itself');
  }
  // Upstream's answer to a missing or empty code, before anything else is read.
  if (typeof code !== 'string' || !code) throw invalidCode(400);
  const mfa = await getMfa(ctx, caller.identityId);
  if (!mfa || !isSet(mfa.isVerified)) throw new ApiError(409, 'MFA_NOT_ENROLLED', 'The current identity is not enrolled in MFA');
  // TOTP codes only, no recovery codes (as upstream), through the identity's budget of wrong codes.
  if (!(await checkCode(ctx, mfa, code, { recovery: false }))) throw invalidCode(400);
  const access = await checkAccessToken(ctx, caller.token);
  const now = ctx.clock.now();
  const audience = (Array.isArray(access.aud) ? access.aud : access.aud ? [access.aud] : []).map(String);
  const token = await new SignJWT({ z_asid: access.z_asid, z_t: TOTP_TOKEN_TYPE, ...(audience.length ? { aud: audience } : {}) })
    .setProtectedHeader({ alg: ctx.pki.signingJwk.alg, kid: ctx.pki.signingJwk.kid, typ: 'JWT' })
    .setIssuer(rootIssuer(ctx))
    .setSubject(String(access.sub))
    .setIssuedAt(Math.floor(now.getTime() / 1000))
    .setJti(randomUUID())
    .sign(ctx.pki.signingKey);
  // issuedAt is the token's iat, to the second as the JWT carries it.
  return { token, issuedAt: iso(new Date(Math.floor(now.getTime() / 1000) * 1000)) };
}
