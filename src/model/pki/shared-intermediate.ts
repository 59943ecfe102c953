// The intermediate CA of a network whose controllers share one database: pki/ is per controller (each
// has its own server certificate and edge router), but the root and the intermediate are copied to every
// controller when it joins (docs/postgresql.md), so that whatever one of them issued, the others trust.
// A renewal of the intermediate must keep that so: the controller that renews it first claims the
// replacement in pki_intermediates (a row naming the intermediate it replaces, unique: one replacement
// each), with the new key sealed by the secrets key the controllers share; the others find it there at
// their next check and adopt it (the same journaled switch, pki-switch.ts). A controller that loses the
// claim adopts the winner's. With one controller (SQLite) the table only records its own.
import { X509Certificate } from 'node:crypto';
import type { Ctx } from '../context.js';
import { iso } from '../clock.js';
import { controllerId } from '../resources/controllers.js';

/** An intermediate's id in the table: SHA-256 of its DER, lower-case hex. */
export const intermediateId = (pem: string) => new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase();

/** Whether `pem` is a CA certificate issued by `rootPem`. */
function underRoot(pem: string, rootPem: string): boolean {
  try {
    const cert = new X509Certificate(pem);
    const root = new X509Certificate(rootPem);
    return cert.ca && cert.checkIssued(root) && cert.verify(root.publicKey);
  } catch {
    return false;
  }
}

/** Record this controller's current intermediate when the table does not know it (first start, upgrade). */
export async function publishIntermediate(ctx: Ctx): Promise<void> {
  const id = intermediateId(ctx.pki.intermediatePem);
  const known = await ctx.store.db.selectFrom('pkiIntermediates').select('id').where('id', '=', id).executeTakeFirst();
  if (known) return;
  await ctx.store.db
    .insertInto('pkiIntermediates')
    .values({ id, certPem: ctx.pki.intermediatePem, keySealed: ctx.sealer.seal(ctx.pki.intermediateKeyPem), replaces: null, controllerId: controllerId(ctx.config.dataDir), createdAt: iso(ctx.clock.now()) })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

/**
 * The intermediate that replaced ours, following the replacements to the newest (a controller that was
 * down during two renewals goes straight to the second), when there is one under our root: its
 * certificate and key. Undefined when ours is the newest.
 */
export async function replacementOf(ctx: Ctx): Promise<{ pem: string; keyPem: string; by: string } | undefined> {
  let current = intermediateId(ctx.pki.intermediatePem);
  let found: { certPem: string; keySealed: string; controllerId: string } | undefined;
  for (let hops = 0; hops < 100; hops++) {
    const next = await ctx.store.db.selectFrom('pkiIntermediates').select(['id', 'certPem', 'keySealed', 'controllerId']).where('replaces', '=', current).executeTakeFirst();
    if (!next || !underRoot(next.certPem, ctx.pki.rootPem)) break;
    found = next;
    current = next.id;
  }
  if (!found) return undefined;
  let keyPem: string;
  try {
    keyPem = ctx.sealer.open(found.keySealed);
  } catch {
    throw new Error('another controller of this database renewed the intermediate, but its key cannot be opened here: this controller\'s pki/secrets.key is not the one the others use (copy it from the first controller, docs/postgresql.md)');
  }
  return { pem: found.certPem, keyPem, by: found.controllerId };
}

/**
 * Claim the replacement of our current intermediate by `next`: true when this controller's claim won
 * (it then switches to it), false when another controller claimed it first (adopt theirs instead).
 */
export async function claimReplacement(ctx: Ctx, next: { pem: string; keyPem: string }): Promise<boolean> {
  await publishIntermediate(ctx);
  try {
    await ctx.store.db
      .insertInto('pkiIntermediates')
      .values({ id: intermediateId(next.pem), certPem: next.pem, keySealed: ctx.sealer.seal(next.keyPem), replaces: intermediateId(ctx.pki.intermediatePem), controllerId: controllerId(ctx.config.dataDir), createdAt: iso(ctx.clock.now()) })
      .execute();
    return true;
  } catch (err) {
    if (ctx.store.dialect.uniqueViolation(err)) return false;
    throw err;
  }
}
