// Short-lived certificates bound to an API session (they end with it): signed from a CSR for the client
// API's POST /current-api-session/certificates, and for an OIDC login or refresh that sends a CSR
// (upstream's OIDC_AUTH_WITH_CSR: the certificate comes back as session_cert in the token answer).
import { X509Certificate } from 'node:crypto';
import type { Ctx } from '../context.js';
import { writeTx } from '../crud.js';
import { recordRowChange } from '../events/record.js';
import { newId } from '../ids.js';
import { signClientCsr } from '../pki/client-certs.js';

export const SESSION_CERT_HOURS = 12;

export async function issueSessionCertificate(ctx: Ctx, o: { apiSessionId: string; identityId: string; csrPem: string; hours?: number }) {
  const { pem, fingerprint } = await signClientCsr(ctx, o.csrPem, o.identityId, { hours: o.hours ?? SESSION_CERT_HOURS });
  const x = new X509Certificate(pem);
  const id = newId();
  const now = ctx.clock.now().toISOString();
  const row = { id, createdAt: now, updatedAt: now, tags: '{}', apiSessionId: o.apiSessionId, certPem: pem, fingerprint, subject: x.subject.replace(/\n/g, ','), validFrom: new Date(x.validFrom).toISOString(), validTo: new Date(x.validTo).toISOString() };
  await writeTx(ctx, async (tx) => {
    await tx.insertInto('apiSessionCertificates').values(row).execute();
    await recordRowChange(tx, ctx, 'apiSessionCertificates', 'created', id, null, row);
  });
  return { id, pem, fingerprint };
}
