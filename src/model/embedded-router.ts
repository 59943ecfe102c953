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
import { renewAt, serverNames } from './pki/pki.js';
import { sha256Fingerprint } from './pki/fingerprint.js';
import type { PkiEvent } from './events/types.js';
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


/** The router's name at first start: `<host>-router`, or with a number when another router has it. */
async function freeName(ctx: Ctx): Promise<string> {
  const base = `${os.hostname().split('.')[0] || 'ztc'}-router`;
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if (!(await ctx.store.db.selectFrom('routers').select('id').where('name', '=', name).executeTakeFirst())) return name;
  }
}

/**
 * Make (first start) or keep in step the embedded router's record and certificate. Its certificate is
 * re-issued when its names or the intermediate changed, or once a third of its lifetime is left
 * (`now`, the controller's clock: the data plane asks again at every look of model/pki/renewal.ts, so
 * it renews while serving, as the controller's own do).
 */
export async function ensureEmbeddedRouter(ctx: Ctx, o: { address: string; port: number; progress?: (s: string) => void; now?: number }): Promise<EmbeddedRouter> {
  const now = o.now ?? ctx.clock.now().getTime();
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
  const why = certPem ? unfit(certPem, row.id, names, ctx.pki.intermediatePem, now) : 'first';
  if (why) {
    const previous = certPem;
    const publicKey = forge.pki.publicKeyFromPem(createPublicKey(keyPem).export({ type: 'spki', format: 'pem' }) as string);
    certPem = issueCertificate({ commonName: row.id, publicKey, issuerPem: ctx.pki.intermediatePem, issuerKeyPem: ctx.pki.intermediateKeyPem, days: 365, sans: names, usage: 'server+client', now });
    // Written whole or not at all: the router keeps serving the old one until this one is in place.
    fs.writeFileSync(`${certFile}.tmp`, certPem);
    fs.renameSync(`${certFile}.tmp`, certFile);
    if (previous) {
      ctx.events.emit(ctx.events.stamp<PkiEvent>({
        namespace: 'pki', event_type: 'renewed', certificate: 'edge-router', reason: why, fingerprint: sha256Fingerprint(certPem), previous_fingerprint: sha256Fingerprint(previous),
        not_after: new Date(new X509Certificate(certPem).validTo).toISOString(), renews_at: new Date(renewAt(certPem)).toISOString(),
      }));
    }
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

/** Whether the embedded router's certificate (`certPem`, its leaf first) must be re-issued now: see unfit. */
export function embeddedCertDue(ctx: Ctx, o: { certPem: string; id: string; address: string; now: number }): boolean {
  return !!unfit(o.certPem, o.id, serverNames([o.address, ...ctx.config.hostnames]), ctx.pki.intermediatePem, o.now);
}

/**
 * Why a stored certificate must be re-issued (undefined: it is still right): another router's id or
 * names (names), not issued by our current intermediate (intermediate), a third of its lifetime left
 * (due, as the controller's own certificates renew: model/pki/renewal.ts).
 */
function unfit(pem: string, id: string, names: string[], intermediatePem: string, now: number): string | undefined {
  const cert = new X509Certificate(pem);
  const san = (cert.subjectAltName ?? '').toLowerCase();
  if (!cert.subject.includes(`CN=${id}`) || !names.every((n) => san.includes(n.toLowerCase()) || n.includes(':'))) return 'names';
  if (!cert.checkIssued(new X509Certificate(intermediatePem))) return 'intermediate';
  if (now >= renewAt(pem)) return 'due';
  return undefined;
}
