// Router certificates: enrollment with the router's one-time token (a client certificate and a server
// certificate from two CSRs), extension with the current client certificate, and re-enrollment.
import { X509Certificate, X509Certificate as X509 } from 'node:crypto';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import { ApiError, notFound } from '../errors.js';
import { edgeRouters, insertRouterEnrollment } from '../resources/routers.js';
import { createIn, writeTx } from '../crud.js';
import { fromJson } from '../../store/json.js';
import { fingerprintOf } from './certs.js';
import { isCurrent, issuingCa, requireClientCert, signClientCsr } from './client-certs.js';
import { peekEnrollment, takeEnrollment } from './enroll.js';
import { recordRowChange } from '../events/record.js';

const needCsr = (field: string, v: unknown): string => {
  if (typeof v !== 'string' || !v.trim()) throw new ApiError(400, 'COULD_NOT_PROCESS_CSR', `${field} is required: a PEM certificate signing request`, { field, reason: 'required' });
  return v;
};

/** PEMs one after the other, each on its own lines. */
const pemChain = (...pems: string[]) => pems.map((p) => `${p.trim()}\n`).join('');

/**
 * The router's two certificates: CN = router id; the server certificate carries the CSR's host names.
 * `chain`: what the router is handed, as upstream's enrollment does: each leaf followed by the
 * intermediate that issued it, so the router presents the whole chain on TLS. A peer whose CA bundle
 * predates an intermediate renewal (an SDK enrolled before `ztc pki renew intermediate`, holding the
 * old intermediate and the root) then still reaches the root through the router's new intermediate;
 * with the leaf alone it refused the router (`tls: unknown certificate authority`). Only the leaf is
 * stored (its fingerprint names the router).
 */
async function issueRouterCerts(ctx: Ctx, routerId: string, clientCsr: string, serverCsr: string) {
  // The intermediate that signs both (signClientCsr reads it now): a renewal meanwhile changes neither.
  const issuer = ctx.pki.intermediatePem;
  const [client, serverCert] = await Promise.all([
    signClientCsr(ctx, clientCsr, routerId, { usage: 'client' }),
    signClientCsr(ctx, serverCsr, routerId, { usage: 'server+client', sans: 'fromCsr' }),
  ]);
  return { client, serverCert, hostname: serverCert.sans[0], chain: { client: pemChain(client.pem, issuer), server: pemChain(serverCert.pem, issuer) } };
}

export async function enrollRouter(ctx: Ctx, token: unknown, clientCsr: unknown, serverCsr: unknown) {
  const c = needCsr('clientCsr', clientCsr);
  const s = needCsr('serverCsr', serverCsr);
  // Signed before the transaction (which would wait for it); the claim inside decides.
  const peeked = await peekEnrollment(ctx, token, ['erott', 'trott']);
  const { client, serverCert, hostname, chain } = await issueRouterCerts(ctx, peeked.routerId ?? '', c, s);
  return writeTx(ctx, async (tx) => {
    const e = await takeEnrollment(tx, ctx, token, ['erott', 'trott']);
    const router = await tx.selectFrom('routers').selectAll().where('id', '=', e.routerId!).executeTakeFirst();
    if (!router) throw notFound('router', e.routerId ?? '');
    const changed = { fingerprint: client.fingerprint, certPem: client.pem, serverCertPem: serverCert.pem, isVerified: 1, hostname, updatedAt: iso(ctx.clock.now()) };
    await tx.updateTable('routers').set(changed).where('id', '=', router.id).execute();
    await recordRowChange(tx, ctx, 'routers', 'updated', router.id, router as never, { ...router, ...changed }, 'enroll');
    return { ca: ctx.pki.caBundlePem, cert: chain.client, serverCert: chain.server };
  });
}

/** New certificates for the router presenting its current client certificate; that certificate stops working at once. */
export async function extendRouter(ctx: Ctx, presented: X509Certificate[], certCsr: unknown, serverCertCsr: unknown) {
  const leaf = requireClientCert(presented);
  const fingerprint = fingerprintOf(leaf.toString());
  const router = await ctx.store.db.selectFrom('routers').select('id').where('fingerprint', '=', fingerprint).executeTakeFirst();
  if (!router) throw new ApiError(401, 'UNAUTHORIZED', 'The presented certificate is not the current certificate of an enrolled router');
  if (ctx.enrolling) ctx.enrolling.routerId = router.id;
  const certs = await issueRouterExtension(ctx, router.id, certCsr, serverCertCsr);
  await adoptRouterCerts(ctx, router.id, fingerprint, certs);
  return { ca: ctx.pki.caBundlePem, cert: certs.chain.client, serverCert: certs.chain.server };
}

export type RouterCerts = Awaited<ReturnType<typeof issueRouterCerts>>;

/** A router's new certificates from its two CSRs, not yet its own (adoptRouterCerts makes them so). */
export function issueRouterExtension(ctx: Ctx, routerId: string, certCsr: unknown, serverCertCsr: unknown): Promise<RouterCerts> {
  return issueRouterCerts(ctx, routerId, needCsr('certCsr', certCsr), needCsr('serverCertCsr', serverCertCsr));
}

/**
 * The router's certificates become `certs`, if its current one is still the one with fingerprint
 * `from` (a no-op refused when another extension won meanwhile); the old client certificate stops
 * naming the router at once.
 */
export async function adoptRouterCerts(ctx: Ctx, routerId: string, from: string, certs: RouterCerts, method = 'extend') {
  await writeTx(ctx, async (tx) => {
    const router = await tx.selectFrom('routers').selectAll().where('id', '=', routerId).where('fingerprint', '=', from).executeTakeFirst();
    if (!router) throw new ApiError(401, 'UNAUTHORIZED', 'The router\'s certificate changed while it was being extended');
    const changed = { fingerprint: certs.client.fingerprint, certPem: certs.client.pem, serverCertPem: certs.serverCert.pem, hostname: certs.hostname, updatedAt: iso(ctx.clock.now()) };
    await tx.updateTable('routers').set(changed).where('id', '=', routerId).where('fingerprint', '=', from).execute();
    await recordRowChange(tx, ctx, 'routers', 'updated', routerId, router as never, { ...router, ...changed }, method);
  });
}

/** Forget the router's certificates and give it a new enrollment (replacing any outstanding one). */
export async function reEnrollRouter(ctx: Ctx, routerId: string) {
  await writeTx(ctx, async (tx) => {
    const router = await tx.selectFrom('routers').selectAll().where('id', '=', routerId).where('isEdge', '=', 1).executeTakeFirst();
    if (!router) throw notFound('edge router', routerId);
    const outstanding = await tx.selectFrom('enrollments').selectAll().where('routerId', '=', routerId).execute();
    await tx.deleteFrom('enrollments').where('routerId', '=', routerId).execute();
    for (const e of outstanding) await recordRowChange(tx, ctx, 'enrollments', 'deleted', e.id, e as never, null, 're-enroll');
    const changed = { fingerprint: null, certPem: null, serverCertPem: null, isVerified: 0, updatedAt: iso(ctx.clock.now()) };
    await tx.updateTable('routers').set(changed).where('id', '=', routerId).execute();
    await recordRowChange(tx, ctx, 'routers', 'updated', routerId, router as never, { ...router, ...changed }, 're-enroll');
    await insertRouterEnrollment(tx, ctx, routerId);
  });
}

/** The verified CAs marked for router enrollment (ztc's, ziti#1390): what the control channel lets in before a router's hello. */
export async function routerEnrollmentCas(ctx: Ctx): Promise<X509Certificate[]> {
  const rows = await ctx.store.db.selectFrom('cas').select('certPem').where('isVerified', '=', 1).where('isEdgeRouterEnrollmentEnabled', '=', 1).execute();
  return rows.map((r) => new X509(r.certPem));
}

/** A router id as it is carried in paths and hellos (its certificate's common name must be one to enroll). */
const ROUTER_ID = /^[A-Za-z0-9._@-]{1,64}$/;

/**
 * Routers that enroll themselves (ztc's, ziti#1390): a router the network does not know that presents, on
 * the control channel, a current certificate from a verified CA marked for router enrollment is created as
 * an edge router and enrolled with that certificate, as identities are by CA auto-enrollment. Its id is the
 * certificate's common name (what an upstream router says in its hello), its name too (with a number after
 * it when taken), its role attributes the CA's edgeRouterRoles. Returns why not when it does not enroll.
 */
export async function enrollRouterByCa(ctx: Ctx, routerId: string, presented: X509Certificate[]): Promise<{ id: string; name: string; caId: string } | { refused: string }> {
  const leaf = presented[0];
  if (!leaf) return { refused: 'unknown router' };
  const ca = await issuingCa(ctx, leaf, presented, 'isEdgeRouterEnrollmentEnabled');
  if (!ca) return { refused: 'unknown router' };
  if (!isCurrent(leaf, ctx.clock.now())) return { refused: `the certificate from CA '${ca.name}' is outside its validity window` };
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(leaf.subject)?.[1] ?? '';
  if (!ROUTER_ID.test(cn)) return { refused: `the certificate's common name '${cn}' cannot be a router id (letters, digits, . _ @ -, at most 64)` };
  if (cn !== routerId) return { refused: `the hello names router '${routerId}' but the certificate from CA '${ca.name}' is '${cn}'` };
  const roles = fromJson<string[]>(ca.edgeRouterRoles, []);
  try {
    const name = await writeTx(ctx, async (tx) => {
      if (await tx.selectFrom('routers').select('id').where('id', '=', cn).executeTakeFirst()) return undefined;
      let name = cn;
      for (let n = 1; await tx.selectFrom('routers').select('id').where('name', '=', name).executeTakeFirst(); n++) name = `${cn}-${n}`;
      await createIn(tx, ctx, edgeRouters, { name, roleAttributes: roles, cost: 0, noTraversal: false, disabled: false, isTunnelerEnabled: false, appData: {}, ctrlChanListeners: {}, configs: [], tags: { 'ztc.enrolledByCa': ca.id } }, cn);
      // Enrolled already: the one-time token every new edge router gets is not needed.
      const outstanding = await tx.selectFrom('enrollments').selectAll().where('routerId', '=', cn).execute();
      await tx.deleteFrom('enrollments').where('routerId', '=', cn).execute();
      for (const e of outstanding) await recordRowChange(tx, ctx, 'enrollments', 'deleted', e.id, e as never, null, 'enroll-by-ca');
      const before = await tx.selectFrom('routers').selectAll().where('id', '=', cn).executeTakeFirstOrThrow();
      const changed = { fingerprint: fingerprintOf(leaf.toString()), certPem: leaf.toString(), isVerified: 1, updatedAt: iso(ctx.clock.now()) };
      await tx.updateTable('routers').set(changed).where('id', '=', cn).execute();
      await recordRowChange(tx, ctx, 'routers', 'updated', cn, before as never, { ...before, ...changed }, 'enroll-by-ca');
      return name;
    });
    if (!name) return { refused: `router '${cn}' exists: it is enrolled with another certificate` };
    return { id: cn, name, caId: ca.id };
  } catch (e) {
    // Two connections at once: the second finds the router the first made.
    if (await ctx.store.db.selectFrom('routers').select('id').where('id', '=', cn).executeTakeFirst()) return { refused: `router '${cn}' exists: it is enrolled with another certificate` };
    throw e;
  }
}
