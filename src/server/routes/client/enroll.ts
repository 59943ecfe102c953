// Enrollment endpoints of the client API: public (the token or the certificate is the credential).
import { sign } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { enrollCtx } from '../../enrollment-events.js';
import { ApiError } from '../../../model/errors.js';
import { presentedCertificates } from '../../../model/pki/client-certs.js';
import { enrollCa, enrollOtt, enrollOttCa, enrollUpdb } from '../../../model/pki/enroll.js';
import { enrollByToken } from '../../../model/pki/enroll-token.js';
import { IGNORES_UNKNOWN_FIELDS } from '../../schema-compilers.js';
import { enrollRouter, extendRouter } from '../../../model/pki/router-enroll.js';
import { Empty, Envelope, Password } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { empty, ok } from '../../envelope.js';

const pub = { access: 'public' as const };
const tags = ['Enroll'];
const TokenQuery = Type.Object({ token: Type.Optional(Type.String({ maxLength: 255 })), method: Type.Optional(Type.String({ maxLength: 16 })) });
const Certs = Type.Object({ ca: Type.String(), cert: Type.String() });
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const tokenOf = (req: FastifyRequest) => {
  const q = (req.query as { token?: string }).token;
  const b = req.body && typeof req.body === 'object' ? (req.body as { token?: unknown }).token : undefined;
  return q ?? (typeof b === 'string' ? b : undefined);
};

/** The CSR of an enrollment: a PEM body (token in the query), or JSON with clientCsr (or csr). */
function csrOf(body: unknown): unknown {
  if (typeof body === 'string') return body;
  if (body && typeof body === 'object') return (body as { csr?: unknown; clientCsr?: unknown }).clientCsr ?? (body as { csr?: unknown }).csr;
  return undefined;
}

const PEM_TYPES = ['application/x-pem-file', 'application/pkcs10', 'text/plain'] as const;
const PemBody = Type.String({ maxLength: 65536, description: 'A PEM certificate signing request; the token goes in the query string' });
/** A body of any of the forms SDKs send: JSON, or a PEM text under any of its media types. */
const eitherBody = (json: ReturnType<typeof Type.Object>) => ({
  content: {
    'application/json': { schema: json },
    ...Object.fromEntries(PEM_TYPES.map((t) => [t, { schema: PemBody }])),
  },
});
const OttRequest = Type.Object({ token: Type.Optional(Type.String({ maxLength: 255 })), clientCsr: Type.Optional(Type.String({ maxLength: 65536 })) });

/**
 * Whether the caller asked for the certificate as PEM rather than the JSON envelope: the Accept entry
 * of higher quality wins (application/x-pem-file against application/json; wildcards count for both,
 * below an exact type); on a tie, the operation's default.
 */
export function wantsPem(accept: string | undefined, byDefault: boolean): boolean {
  const score = (type: string) => {
    let best = -1;
    for (const part of String(accept ?? '').split(',')) {
      const [range, ...params] = part.trim().toLowerCase().split(';').map((x) => x.trim());
      const q = Number(params.find((p) => p.startsWith('q='))?.slice(2) ?? 1);
      const specificity = range === type ? 2 : range === `${type.split('/')[0]}/*` || range === '*/*' ? 1 : 0;
      if (specificity && Number.isFinite(q)) best = Math.max(best, q * 10 + specificity);
    }
    return best;
  };
  const pem = score('application/x-pem-file');
  const json = score('application/json');
  return pem === json ? byDefault : pem > json;
}

function sendCerts(reply: FastifyReply, certs: { cert: string; ca: string }, pem: boolean) {
  return pem ? reply.type('application/x-pem-file').send(certs.cert) : reply.send(ok(certs));
}

export function registerEnroll(app: FastifyInstance, ctx: Ctx) {
  app.post(
    '/enroll',
    {
      config: pub,
      schema: {
        operationId: 'enroll', tags, summary: 'Enroll with a one-time token (method ?method=, ott by default): ott takes a PEM CSR body and answers the certificate PEM unless JSON is asked for; erott (edge routers) and trott (transit routers) take a router\'s JSON CSRs',
        querystring: TokenQuery, consumes: ['application/pkcs10', 'application/x-pem-file', 'text/plain', 'application/json'], produces: ['application/x-pem-file', 'application/json'],
        response: errors(400, 404, 409),
      },
    },
    async (req, reply) => {
      const { method } = req.query as { method?: string };
      const token = tokenOf(req);
      if (method === 'updb') {
        const password = (req.body as { password?: unknown } | undefined)?.password;
        if (typeof password !== 'string' || password.length < 5 || password.length > 100) throw new ApiError(400, 'COULD_NOT_VALIDATE', 'password must be a string of 5 to 100 characters', { field: 'password', reason: 'length 5 to 100' });
        await enrollUpdb(enrollCtx(ctx, req), token, password);
        return empty();
      }
      if (method === 'ottca') {
        await enrollOttCa(enrollCtx(ctx, req), token, presentedCertificates(req.raw.socket));
        return empty();
      }
      if (method === 'ca') {
        await enrollCa(enrollCtx(ctx, req), presentedCertificates(req.raw.socket));
        return empty();
      }
      if (method === 'erott' || method === 'trott') {
        // How routers enroll (edge: erott, transit: trott) (router/enroll: the JWT's enrollment URL, a JSON body with both CSRs).
        const b = (req.body && typeof req.body === 'object' ? req.body : {}) as RouterCsrs;
        return ok(await enrollRouter(enrollCtx(ctx, req), token, b.clientCsr ?? b.certCsr, b.serverCsr ?? b.serverCertCsr));
      }
      if (method && method !== 'ott') throw new ApiError(400, 'INVALID_ENROLL_METHOD', `Unknown enrollment method '${method}': use ott, ottca, updb, ca, erott or trott`);
      // Upstream's legacy form: the certificate as PEM unless JSON is asked for (SDKs read either).
      return sendCerts(reply, await enrollOtt(enrollCtx(ctx, req), token, csrOf(req.body)), wantsPem(req.headers.accept, true));
    },
  );

  app.post(
    '/enroll/ott',
    {
      config: pub,
      schema: {
        operationId: 'enrollOtt', tags,
        summary: 'Enroll with a one-time token and a CSR, as JSON {token, clientCsr} or as a PEM body with ?token=: answers the client certificate and the CA bundle (JSON), or the certificate alone as PEM when Accept prefers application/x-pem-file',
        querystring: TokenQuery, body: eitherBody(OttRequest), produces: ['application/json', 'application/x-pem-file'],
        response: { 200: Envelope(Certs), ...errors(400, 404, 409) },
      },
    },
    async (req, reply) => sendCerts(reply, await enrollOtt(enrollCtx(ctx, req), tokenOf(req), csrOf(req.body)), wantsPem(req.headers.accept, false)),
  );

  app.post(
    '/enroll/token',
    {
      config: { ...pub, ...IGNORES_UNKNOWN_FIELDS },
      schema: {
        operationId: 'enrollToken', tags,
        summary: 'Enroll a new identity with an external identity provider\'s JWT (Authorization: Bearer), through the external JWT signer that issued it (or the one ziti-token-issuer-id names): with clientCsr it gets a certificate, without it logs in with the provider\'s JWTs',
        headers: Type.Object({ authorization: Type.Optional(Type.String({ maxLength: 16384 })), 'ziti-token-issuer-id': Type.Optional(Type.String({ maxLength: 64 })) }),
        body: Type.Object({ clientCsr: Type.Optional(Type.String({ maxLength: 65536 })) }),
        response: { 200: Envelope(Type.Object({ ca: Type.Optional(Type.String()), cert: Type.Optional(Type.String()) })), ...errors(400, 409) },
      },
    },
    async (req) => {
      const h = req.headers as Record<string, string | undefined>;
      return ok(await enrollByToken(enrollCtx(ctx, req), { authorization: h.authorization, issuerId: h['ziti-token-issuer-id'], clientCsr: (req.body as { clientCsr?: string }).clientCsr }));
    },
  );

  app.post(
    '/enroll/updb',
    {
      config: pub,
      schema: {
        operationId: 'enrollUpdb', tags, summary: 'Enroll with a one-time token: set the password of the username the administrator chose',
        querystring: TokenQuery, body: Type.Object({ password: Password, token: Type.Optional(Type.String({ maxLength: 255 })) }),
        response: { 200: Envelope(Empty), ...errors(400, 404) },
      },
    },
    async (req) => {
      await enrollUpdb(enrollCtx(ctx, req), tokenOf(req), (req.body as { password: string }).password);
      return empty();
    },
  );

  app.post(
    '/enroll/ottca',
    {
      config: pub,
      schema: {
        operationId: 'enrollOttCa', tags, summary: 'Enroll with a one-time token (?token= or JSON {token}) and a certificate from the enrollment\'s CA, presented over TLS; a body of another form is ignored',
        querystring: TokenQuery, body: eitherBody(OttRequest), response: { 200: Envelope(Empty), ...errors(400, 401, 409) },
      },
    },
    async (req) => {
      await enrollOttCa(enrollCtx(ctx, req), tokenOf(req), presentedCertificates(req.raw.socket));
      return empty();
    },
  );

  app.post(
    '/enroll/ca',
    {
      config: pub,
      schema: { operationId: 'enrollCa', tags, summary: 'CA auto-enrollment: a certificate from a verified CA, presented over TLS, creates its identity', response: { 200: Envelope(Empty), ...errors(400, 401, 409) } },
    },
    async (req) => {
      await enrollCa(enrollCtx(ctx, req), presentedCertificates(req.raw.socket));
      return empty();
    },
  );

  const RouterCerts = Type.Object({ ca: Type.String(), cert: Type.String(), serverCert: Type.String() });
  type RouterCsrs = { clientCsr?: string; serverCsr?: string; certCsr?: string; serverCertCsr?: string };
  const Csr = Type.String({ minLength: 1, maxLength: 65536 });
  app.post(
    '/enroll/erott',
    {
      config: pub,
      schema: {
        operationId: 'enrollErOtt', tags, summary: 'Enroll a router with its one-time token: a client certificate and a server certificate from two CSRs',
        querystring: TokenQuery,
        body: Type.Object({ token: Type.Optional(Type.String({ maxLength: 255 })), clientCsr: Type.Optional(Csr), serverCsr: Type.Optional(Csr), certCsr: Type.Optional(Csr), serverCertCsr: Type.Optional(Csr) }),
        response: { 200: Envelope(RouterCerts), ...errors(400, 409) },
      },
    },
    async (req) => {
      const b = req.body as RouterCsrs;
      return ok(await enrollRouter(enrollCtx(ctx, req), tokenOf(req), b.clientCsr ?? b.certCsr, b.serverCsr ?? b.serverCertCsr));
    },
  );

  app.post(
    '/enroll/extend/router',
    {
      config: pub,
      schema: {
        operationId: 'extendRouterEnrollment', tags, summary: 'New certificates for an enrolled router, which presents its current client certificate over TLS; that certificate stops working at once',
        body: Type.Object({ certCsr: Csr, serverCertCsr: Csr }),
        response: { 200: Envelope(RouterCerts), ...errors(400, 401) },
      },
    },
    async (req) => {
      const b = req.body as { certCsr: string; serverCertCsr: string };
      return ok(await extendRouter(enrollCtx(ctx, req), presentedCertificates(req.raw.socket), b.certCsr, b.serverCertCsr));
    },
  );

  app.post(
    '/enroll/challenge',
    {
      config: pub,
      schema: {
        operationId: 'enrollmentChallenge', tags, summary: 'Prove this controller holds an enrollment key: sign a nonce with the key named by keyId',
        body: Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 255 }), nonce: Type.String({ maxLength: 64 }) }),
        response: { 200: Type.Object({ algorithm: Type.String(), caPool: Type.String(), kid: Type.String(), signature: Type.String() }), ...errors(400) },
      },
    },
    async (req) => {
      const { keyId, nonce } = req.body as { keyId: string; nonce: string };
      if (!UUID.test(nonce)) throw new ApiError(400, 'INVALID_FIELD', 'nonce must be a UUID', { field: 'nonce', reason: 'must be a UUID', value: nonce });
      const held = ctx.pki.signingKeys.find((k) => k.kid === keyId);
      if (!held) throw new ApiError(400, 'INVALID_FIELD', `No enrollment key has the id '${keyId}': see GET /enroll/jwks`, { field: 'keyId', reason: 'unknown key', value: keyId });
      const signature = sign('sha256', Buffer.from(nonce), { key: held.key, dsaEncoding: 'ieee-p1363' });
      return { algorithm: held.jwk.alg, caPool: ctx.pki.caBundlePem, kid: keyId, signature: signature.toString('base64url') };
    },
  );

  app.get(
    '/enroll/jwks',
    { config: pub, schema: { operationId: 'getEnrollmentJwks', tags, summary: 'The public keys that sign enrollment JWTs (no envelope)' } },
    async () => ({ keys: ctx.pki.signingKeys.map((k) => k.jwk) }),
  );
}
