// MFA of the calling identity (both APIs) and completing MFA on an API session.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import {
  completeMfaLogin, deleteMfa, getMfa, mfaDetail, mfaNotFound, qrCodePng, recoveryCodesOf, regenerateRecoveryCodes, startMfa, verifyMfa,
} from '../../../model/auth/mfa.js';
import { createTotpToken } from '../../../model/auth/totp-token.js';
import { loginFailed } from '../../../model/events/emit.js';
import { selfLink } from '../../../model/resource.js';
import { baseFields, CreateLocation, Empty, Envelope } from '../../../model/schemas/common.js';
import { isSet } from '../../../store/json.js';
import { actorCtx } from '../../actor.js';
import { errors } from '../../crud.js';
import { empty, ok } from '../../envelope.js';
import { principalOf } from '../../plugins/auth.js';

const partial = { access: 'partial' as const };
const tags = ['MFA'];
const Code = Type.Object({ code: Type.String({ minLength: 1, maxLength: 64 }) });
const MfaDetail = Type.Object({ ...baseFields, isVerified: Type.Boolean(), provisioningUrl: Type.String(), recoveryCodes: Type.Array(Type.String()) });
const RecoveryCodes = Type.Object({ ...baseFields, recoveryCodes: Type.Array(Type.String()) });
const headerCode = (req: FastifyRequest) => {
  const h = req.headers['mfa-validation-code'];
  return typeof h === 'string' ? h : undefined;
};

export function registerMfa(app: FastifyInstance, ctx: Ctx) {
  app.post(
    '/authenticate/mfa',
    { config: partial, schema: { operationId: 'authenticateMfa', tags: ['Authentication'], summary: 'Complete MFA on this API session with a TOTP code or a recovery code', body: Code, response: { 200: Envelope(Empty), ...errors(400, 401) } } },
    async (req) => {
      const p = principalOf(req);
      try {
        await completeMfaLogin(actorCtx(ctx, req), p.identityId, p.apiSessionId, (req.body as { code: string }).code);
      } catch (err) {
        // A login's second factor refused: an authentication event of method mfa (ziti#1834), never the code.
        loginFailed(ctx, 'mfa', err, req.ip, { identityId: p.identityId });
        throw err;
      }
      return empty();
    },
  );
  app.post(
    '/current-api-session/totp-token',
    {
      config: { access: 'session' as const },
      schema: {
        operationId: 'createTotpToken', tags: ['Current API Session', 'MFA'],
        summary: 'A signed token proving a TOTP code of the caller\'s MFA was checked now, for MFA posture checks of an OIDC API session (Authorization: Bearer access token)',
        body: Code, response: { 200: Envelope(Type.Object({ token: Type.String(), issuedAt: Type.String({ format: 'date-time' }) })), ...errors(400, 401, 404, 409, 429) },
      },
    },
    async (req) => {
      const p = principalOf(req);
      return ok(await createTotpToken(actorCtx(ctx, req), { identityId: p.identityId, token: p.token }, (req.body as { code: string }).code));
    },
  );
  app.get(
    '/current-identity/mfa',
    { config: partial, schema: { operationId: 'detailMfa', tags, summary: 'MFA enrollment status of the calling identity', response: { 200: Envelope(MfaDetail), ...errors(401, 404) } } },
    async (req) => {
      const p = principalOf(req);
      const m = await getMfa(ctx, p.identityId);
      if (!m) throw mfaNotFound();
      return ok(mfaDetail(ctx, m, p.identityName));
    },
  );
  app.post(
    '/current-identity/mfa',
    { config: partial, schema: { operationId: 'enrollMfa', tags, summary: 'Start TOTP MFA enrollment (then verify it with a code)', response: { 201: Envelope(CreateLocation), ...errors(401, 409) } } },
    async (req, reply) => {
      const id = await startMfa(actorCtx(ctx, req), principalOf(req).identityId);
      reply.code(201);
      return ok({ id, _links: selfLink('current-identity/mfa', id) });
    },
  );
  app.delete(
    '/current-identity/mfa',
    { config: partial, schema: { operationId: 'deleteMfa', tags, summary: 'Disable MFA: a current code in header mfa-validation-code (empty while not verified)', response: { 200: Envelope(Empty), ...errors(401, 404) } } },
    async (req) => {
      await deleteMfa(actorCtx(ctx, req), principalOf(req).identityId, headerCode(req));
      return empty();
    },
  );
  app.get(
    '/current-identity/mfa/qr-code',
    { config: partial, schema: { operationId: 'detailMfaQrCode', tags, summary: 'The provisioning URL as a QR code (PNG), while enrollment is pending', produces: ['image/png'], response: errors(401, 404) } },
    async (req, reply) => {
      const p = principalOf(req);
      const m = await getMfa(ctx, p.identityId);
      if (!m || isSet(m.isVerified)) throw mfaNotFound();
      return reply.type('image/png').send(await qrCodePng(ctx, m, p.identityName));
    },
  );
  app.post(
    '/current-identity/mfa/verify',
    { config: partial, schema: { operationId: 'verifyMfa', tags, summary: 'Finish MFA enrollment with a code from the authenticator app', body: Code, response: { 200: Envelope(Empty), ...errors(400, 401, 404) } } },
    async (req) => {
      const p = principalOf(req);
      await verifyMfa(actorCtx(ctx, req), p.identityId, p.apiSessionId || undefined, (req.body as { code: string }).code);
      return empty();
    },
  );
  app.get(
    '/current-identity/mfa/recovery-codes',
    { config: partial, schema: { operationId: 'detailMfaRecoveryCodes', tags, summary: 'The unused recovery codes (a current code in header mfa-validation-code)', response: { 200: Envelope(RecoveryCodes), ...errors(401, 404) } } },
    async (req) => ok(await recoveryCodesOf(ctx, principalOf(req).identityId, headerCode(req))),
  );
  app.post(
    '/current-identity/mfa/recovery-codes',
    { config: partial, schema: { operationId: 'createMfaRecoveryCodes', tags, summary: 'Replace all recovery codes (a current code in the body)', body: Code, response: { 200: Envelope(Empty), ...errors(401, 404) } } },
    async (req) => {
      await regenerateRecoveryCodes(actorCtx(ctx, req), principalOf(req).identityId, (req.body as { code: string }).code);
      return empty();
    },
  );
}
