// GET /pki/status (our extension, not upstream's): every certificate the controller holds or issued, with
// days left, when each of its own renews by itself, and warnings (model/pki/status.ts). POST /pki/renew
// replaces the server certificate, the intermediate or the enrollment signer now, through the same
// renewal as the one that comes due (model/pki/renewal.ts), and serves it at once.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import type { RenewTarget } from '../../../model/pki/pki.js';
import { edgeRouterPem } from '../../../model/pki/renewal.js';
import { ownCertificates, ownExpiryWarnings, storedCertificates } from '../../../model/pki/status.js';
import { Envelope, Nullable } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { ok } from '../../envelope.js';

const CertStatus = Type.Object({
  kind: Type.String({ description: 'root, intermediate, server, signer (the server certificate\'s key, with its dates; "replaced signer" for a replaced key still published), edge-router (the embedded router\'s), ca (trusted third-party CA), identity, router or router-server' }),
  name: Type.String(),
  ownerId: Nullable(Type.String()),
  subject: Type.String(),
  issuer: Type.String(),
  fingerprint: Type.String({ description: 'SHA-256 of the certificate (DER) in lower-case colon hex, as `ztc login` shows it; the key id for the signer' }),
  notBefore: Nullable(Type.String()),
  notAfter: Nullable(Type.String()),
  daysLeft: Nullable(Type.Integer()),
  renewsAt: Nullable(Type.String({ description: 'the controller\'s own: when it renews by itself (a third of its lifetime left); null for the root and for certificates issued to others' })),
});

/** What each renewal means for the clients, said after it. */
const AFTERWARDS: Record<RenewTarget, string> = {
  server:
    'Clients that trust the root CA (enrolled SDKs and tunnelers, routers, ztc profiles, browsers that imported it) keep working; nothing to fetch again.',
  intermediate:
    'Certificates the old intermediate issued keep working until they expire (it stays trusted). Clients that keep the CA bundle rather than the root (from /.well-known/est/cacerts or an identity file\'s ca) should fetch it again to include the new intermediate; those that trust the root need nothing.',
  signer:
    'Enrollment JWTs are signed with the server certificate\'s key, so the server certificate was renewed. Clients that trust the root CA keep working.',
};

export function registerPkiStatus(app: FastifyInstance, ctx: Ctx) {
  app.post(
    '/pki/renew',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'renewPki',
        tags: ['Certificate Authority'],
        summary: 'ztc extension: replace the server certificate, the intermediate CA (and so the server certificate) or the enrollment signing key, and serve it at once',
        body: Type.Object({ target: Type.Union([Type.Literal('server'), Type.Literal('intermediate'), Type.Literal('signer')]) }, { additionalProperties: false }),
        response: { 200: Envelope(Type.Object({ renewed: Type.Array(CertStatus), clients: Type.String({ description: 'what clients must do, if anything' }), servedNow: Type.Boolean({ description: 'false when no TLS server runs in this process (local mode): a controller serving this data dir takes the new certificates up within a minute' }) })), ...errors(400, 401) },
      },
    },
    async (req) => {
      const target = (req.body as { target: RenewTarget }).target;
      // Through the renewal the controller does by itself: the new key announced to routers and the
      // other controllers before it signs, the old one kept until its tokens expire, the ports' TLS
      // contexts swapped (connections open keep theirs), outstanding enrollment JWTs re-signed.
      const { resigned } = await app.pkiRenewal.renew(target);
      const servedNow = app.pkiRenewal.listening;
      const kinds = target === 'intermediate' ? ['intermediate', 'server', 'signer'] : ['server', 'signer'];
      const renewed = ownCertificates(ctx.pki, ctx.clock.now()).filter((c) => kinds.includes(c.kind) && c.name !== 'replaced signer');
      const jwts = resigned
        ? ` The enrollment signing key is the server certificate's: ${resigned} outstanding enrollment JWT(s) were re-signed with the new key; hand out the new ones (ztc enrollment list). The old JWTs' tokens still enroll through the API, but SDKs and routers check the signature against the certificate they see and refuse them.`
        : '';
      return ok({ renewed, clients: AFTERWARDS[target] + jwts, servedNow });
    },
  );

  app.get(
    '/pki/status',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'getPkiStatus',
        tags: ['Certificate Authority'],
        summary: 'ztc extension: every certificate the controller holds or issued, with days left, when each of its own renews by itself, and warnings for its own expiring within 30 days or whose renewal failed',
        querystring: Type.Object({ own: Type.Optional(Type.Boolean({ description: 'only the controller\'s own certificates' })) }, { additionalProperties: false }),
        response: { 200: Envelope(Type.Object({ certificates: Type.Array(CertStatus), warnings: Type.Array(Type.String()) })), ...errors(400, 401) },
      },
    },
    async (req) => {
      const now = ctx.clock.now();
      const routerPem = edgeRouterPem(ctx.config.dataDir);
      const own = ownCertificates(ctx.pki, now, { edgeRouterPem: routerPem });
      const stored = (req.query as { own?: boolean }).own ? [] : await storedCertificates(ctx.store.db, now);
      return ok({ certificates: [...own, ...stored], warnings: ownExpiryWarnings(ctx.pki, now, { edgeRouterPem: routerPem, failure: app.pkiRenewal.failure }) });
    },
  );
}
