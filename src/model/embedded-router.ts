// The edge router that runs inside `ztc serve`: a real edge-router record (role attribute "public",
// verified, its certificate issued by our intermediate with the advertised names as SANs), made at the
// first start and kept in step with the advertised address after. Its id, key and certificate live in
// the data dir's router/ (not pki/, which is copied between controllers sharing a database: each of
// them runs its own router).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPublicKey, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { createIn, writeTx } from './crud.js';
import { recordRowChange } from './events/record.js';
import { fingerprintOf, issueCertificate, newRsaKey } from './pki/certs.js';
import { serverNames } from './pki/pki.js';
import { controllerId } from './resources/controllers.js';
import { edgeRouters } from './resources/routers.js';

export interface EmbeddedRouter {
  id: string;
  name: string;
  certPem: string;
  keyPem: string;
  /** tls://host:port, as SDKs parse supportedProtocols.tls */
  url: string;
}

const RENEW_BEFORE_MS = 30 * 86_400_000;

/** The router's name at first start: `<host>-router`, or with a number when another router has it. */
async function freeName(ctx: Ctx): Promise<string> {
  const base = `${os.hostname().split('.')[0] || 'ztc'}-router`;
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if (!(await ctx.store.db.selectFrom('routers').select('id').where('name', '=', name).executeTakeFirst())) return name;
  }
}

export async function ensureEmbeddedRouter(ctx: Ctx, o: { address: string; port: number; progress?: (s: string) => void }): Promise<EmbeddedRouter> {
  const dir = path.join(ctx.config.dataDir, 'router');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const idFile = path.join(dir, 'router.json');
  const keyFile = path.join(dir, 'router.key');
  const certFile = path.join(dir, 'router.pem');
  const url = `tls://${o.address}:${o.port}`;
  let id = fs.existsSync(idFile) ? (JSON.parse(fs.readFileSync(idFile, 'utf8')) as { id?: string }).id : undefined;
  let row = id ? await ctx.store.db.selectFrom('routers').select(['id', 'name']).where('id', '=', id).where('isEdge', '=', 1).executeTakeFirst() : undefined;
  if (!row) {
    const name = await freeName(ctx);
    o.progress?.(`creating the edge router '${name}' (role attribute public)`);
    const made = await writeTx(ctx, async (tx) => {
      const r = await createIn(tx, ctx, edgeRouters, { name, roleAttributes: ['public'], isTunnelerEnabled: false, cost: 0, noTraversal: false, disabled: false, appData: {} });
      // It needs no enrollment: its certificate is issued here.
      for (const e of await tx.selectFrom('enrollments').selectAll().where('routerId', '=', r.id).execute()) {
        await tx.deleteFrom('enrollments').where('id', '=', e.id).execute();
        await recordRowChange(tx, ctx, 'enrollments', 'deleted', e.id, e as never, null, 'embedded-router');
      }
      return r;
    });
    row = { id: made.id, name };
    id = made.id;
    fs.writeFileSync(idFile, JSON.stringify({ id }) + '\n');
  }
  if (!fs.existsSync(keyFile)) {
    const key = newRsaKey(2048);
    fs.writeFileSync(keyFile, key.privatePem, { mode: 0o600 });
    fs.chmodSync(keyFile, 0o600);
  }
  const keyPem = fs.readFileSync(keyFile, 'utf8');
  const names = serverNames([o.address, ...ctx.config.hostnames]);
  let certPem = fs.existsSync(certFile) ? fs.readFileSync(certFile, 'utf8') : '';
  if (!certPem || !fits(certPem, row.id, names, ctx.pki.intermediatePem)) {
    const publicKey = forge.pki.publicKeyFromPem(createPublicKey(keyPem).export({ type: 'spki', format: 'pem' }) as string);
    certPem = issueCertificate({ commonName: row.id, publicKey, issuerPem: ctx.pki.intermediatePem, issuerKeyPem: ctx.pki.intermediateKeyPem, days: 365, sans: names, usage: 'server+client' });
    fs.writeFileSync(certFile, certPem);
  }
  const routerId = row.id;
  await writeTx(ctx, async (tx) => {
    const before = await tx.selectFrom('routers').selectAll().where('id', '=', routerId).executeTakeFirst();
    const changed = { controllerId: controllerId(ctx.config.dataDir), isVerified: 1, fingerprint: fingerprintOf(certPem), certPem, serverCertPem: certPem, hostname: o.address, supportedProtocols: JSON.stringify({ tls: url }), updatedAt: iso(ctx.clock.now()) };
    await tx.updateTable('routers').set(changed).where('id', '=', routerId).execute();
    // A new certificate (first start, new names, renewal) is a change of the router; a plain restart is not.
    if (before && before.fingerprint !== changed.fingerprint) await recordRowChange(tx, ctx, 'routers', 'updated', routerId, before as never, { ...before, ...changed }, 'certificate');
  });
  return { id: row.id, name: row.name, certPem: certPem + ctx.pki.intermediatePem, keyPem, url };
}

/** Whether a stored certificate is still right: this router's id, every name, our current intermediate, not close to expiry. */
function fits(pem: string, id: string, names: string[], intermediatePem: string): boolean {
  const cert = new X509Certificate(pem);
  const san = (cert.subjectAltName ?? '').toLowerCase();
  return (
    cert.subject.includes(`CN=${id}`) &&
    names.every((n) => san.includes(n.toLowerCase()) || n.includes(':')) &&
    cert.checkIssued(new X509Certificate(intermediatePem)) &&
    Date.parse(cert.validTo) - Date.now() > RENEW_BEFORE_MS
  );
}
