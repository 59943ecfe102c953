// Certificates that renew themselves while the controller serves (ziti#1155, #1994), with the signing
// key re-announced and the old one kept until its tokens expire (upstream bug #4116).
//
// Every CHECK_MS (a minute) the controller looks at its own certificates by its clock:
// - the intermediate and the server certificate renew once a third of their lifetime is left
//   (RENEW_WHEN_LEFT: the server certificate, a year, about four months before it ends; the
//   intermediate, five years, about twenty months before), through the journaled switch of `ztc pki
//   renew` (pki-switch.ts). A new intermediate means a new server certificate too (it is issued by it);
//   what the old intermediate issued stays trusted until it expires (pki/retired/).
// - The intermediate is the network's, shared by the controllers of one database: the one that renews
//   claims the replacement in the database and the others adopt it (shared-intermediate.ts).
// - pki/ changed on disk (`ztc pki renew` in local mode beside the running controller): taken up.
// - A replaced server key (it signed JWTs: enrollment, service sessions, OIDC tokens) stays in every
//   JWKS, in the routers' data model and in every token check until nothing it signed can be valid
//   (keptFor), then it is dropped (pki.ts dropKeys).
// After a change the process's PKI is swapped in place (ctx.pki, which every route and crypto job
// reads), outstanding enrollment JWTs are re-signed, the controller's row (its current and replaced
// certificates, read by the other controllers) is updated, and the listeners are told (the API port's
// TLS context, the data plane's thread: its ports, its keys, the routers' data model). Each renewal and
// each failure is a `pki` event; the root is never replaced here (every client trusts it): it is
// warned about (the `expiring` event, the health check, the metric).
import fs from 'node:fs';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';
import type { Ctx } from '../context.js';
import { iso } from '../clock.js';
import { longestTokenMs } from '../auth/oidc/settings.js';
import { recordRowChange } from '../events/record.js';
import type { PkiEvent } from '../events/types.js';
import { writeTx } from '../crud.js';
import { controllerId, onlineControllerCount } from '../resources/controllers.js';
import { forgetNetworkJwt, reissueEnrollmentJwts } from './jwt.js';
import { sha256Fingerprint } from './fingerprint.js';
import { dropKeys, loadOrCreatePki, makeIntermediate, MAX_RETIRED_KEY_DAYS, renewAt, renewPki, type Pki, type RenewTarget, type SigningKey } from './pki.js';
import { claimReplacement, publishIntermediate, replacementOf } from './shared-intermediate.js';

/** How often the certificates are looked at (ZTC_PKI_CHECK_MS to change it). */
export const CHECK_MS = Math.max(1000, Number(process.env.ZTC_PKI_CHECK_MS ?? 60_000) || 60_000);
const DAY = 86_400_000;

export type RenewReason = 'due' | 'operator' | 'adopted' | 'files';

/** What one look did. */
export interface CheckOutcome {
  renewed: { certificate: 'intermediate' | 'server'; reason: RenewReason }[];
  /** Replaced signing keys withdrawn (their kids). */
  dropped: string[];
  /** Outstanding enrollment JWTs re-signed with the new key. */
  resigned: number;
  /** Whether the PKI of this process changed. */
  changed: boolean;
}

/**
 * A listener is told at every look (the data plane renews its own router's certificate then), and
 * when the PKI changed: `before` ones (the data plane: its ports, the keys it announces to routers)
 * before this process signs with a new key, `after` ones (the API port's TLS context) once it does.
 */
export type PkiListener = (o: { now: number; changed: boolean }) => Promise<void> | void;
interface Listener {
  fn: PkiListener;
  when: 'before' | 'after';
}
/** With other controllers online, how long a new key is announced before this one signs with it (they read it from the database). */
const ANNOUNCE_MS = 3000;

/** One of the controller's own certificates: when it ends, and when it renews (null: never by itself). */
export interface OwnExpiry {
  certificate: 'root' | 'intermediate' | 'server' | 'edge-router';
  notAfter: number;
  renewsAt: number | null;
}

/** The embedded edge router's certificate (data dir router/), if this data dir has one. */
export function edgeRouterPem(dataDir: string): string | undefined {
  try {
    return fs.readFileSync(path.join(dataDir, 'router', 'router.pem'), 'utf8');
  } catch {
    return undefined;
  }
}

export function ownExpiries(pki: Pki, routerPem?: string): OwnExpiry[] {
  const end = (pem: string) => Date.parse(new X509Certificate(pem).validTo);
  const out: OwnExpiry[] = [
    { certificate: 'root', notAfter: end(pki.rootPem), renewsAt: null },
    { certificate: 'intermediate', notAfter: end(pki.intermediatePem), renewsAt: renewAt(pki.intermediatePem) },
    { certificate: 'server', notAfter: end(pki.serverPem), renewsAt: renewAt(pki.serverPem) },
  ];
  if (routerPem) {
    try {
      out.push({ certificate: 'edge-router', notAfter: end(routerPem), renewsAt: renewAt(routerPem) });
    } catch {
      // A damaged file is replaced by the data plane at its next look.
    }
  }
  return out;
}

/**
 * Why a replaced signing key is still published at `now`, or undefined once nothing it signed can be
 * valid: the OIDC tokens it signed (the longest lifetime after it was replaced), the enrollment JWTs
 * it signed that have not expired (re-signed with the new key, but the old copies may be in hand),
 * and the service sessions made before it was replaced (their JWTs are valid for a year, as long as
 * the session lasts: the session is what ends them). Never longer than MAX_RETIRED_KEY_DAYS.
 */
export async function keptFor(ctx: Ctx, key: SigningKey, now: number): Promise<string | undefined> {
  if (key.retiredAt === undefined) return 'the current key';
  const at = key.retiredAt;
  if (now - at >= MAX_RETIRED_KEY_DAYS * DAY) return undefined;
  const tokens = at + longestTokenMs(ctx);
  if (now < tokens) return `OIDC tokens it signed may be valid until ${iso(new Date(tokens))}`;
  const enrollment = await ctx.store.db
    .selectFrom('enrollments')
    .select((eb) => eb.fn.max('expiresAt').as('until'))
    .where('createdAt', '<', iso(new Date(at)))
    .where('expiresAt', '>', iso(new Date(now)))
    .executeTakeFirst();
  if (enrollment?.until) return `an enrollment JWT it signed is valid until ${enrollment.until}`;
  const session = await ctx.store.db.selectFrom('sessions').select('id').where('createdAt', '<', iso(new Date(at))).limit(1).executeTakeFirst();
  if (session) return 'service sessions made before it was replaced still exist (their JWTs are valid as long as the session)';
  return undefined;
}

/** The replaced server certificates this controller still publishes, for its row (the other controllers read them). */
const retiredCerts = (pki: Pki) => pki.signingKeys.filter((k) => k.retiredAt !== undefined && k.certPem).map((k) => ({ certPem: k.certPem!, retiredAt: iso(new Date(k.retiredAt!)) }));

/**
 * This controller's row: its server certificate and the replaced ones still published. Recorded as a
 * change of the controller, so the data planes of every controller re-read the routers' model at once.
 */
export async function publishCertificates(ctx: Ctx, pki: Pki = ctx.pki): Promise<void> {
  const id = controllerId(ctx.config.dataDir);
  const changed = { certPem: pki.serverPem, fingerprint: pki.serverFingerprint, retiredCerts: JSON.stringify(retiredCerts(pki)), updatedAt: iso(ctx.clock.now()) };
  await writeTx(ctx, async (tx) => {
    const before = await tx.selectFrom('controllers').selectAll().where('id', '=', id).executeTakeFirst();
    if (!before || (before.certPem === changed.certPem && before.retiredCerts === changed.retiredCerts)) return;
    await tx.updateTable('controllers').set(changed).where('id', '=', id).execute();
    await recordRowChange(tx, ctx, 'controllers', 'updated', id, before as never, { ...before, ...changed } as never, 'certificate');
  });
}

/** Make `fresh` this process's PKI: swapped in place (the routes and the crypto jobs read ctx.pki). */
async function usePki(ctx: Ctx, fresh: Pki): Promise<number> {
  Object.assign(ctx.pki, fresh);
  forgetNetworkJwt(ctx);
  return reissueEnrollmentJwts(ctx);
}

const fileFingerprint = (dataDir: string, name: string) => {
  try {
    return sha256Fingerprint(fs.readFileSync(path.join(dataDir, 'pki', name), 'utf8'));
  } catch {
    return undefined;
  }
};

export class PkiRenewal {
  /** The last renewal that failed, until one succeeds. */
  failure?: { at: string; certificate: string; error: string };
  /** When the certificates were last looked at. */
  lastCheckAt?: string;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly listeners = new Set<Listener>();
  private timer?: NodeJS.Timeout;

  constructor(
    readonly ctx: Ctx,
    private readonly log: { info(o: object, msg: string): void; warn(o: object, msg: string): void } = { info() {}, warn() {} },
  ) {}

  /** Told at every look, before this process signs with a new key; returns the way to stop. */
  beforeUse(fn: PkiListener): () => void {
    const l: Listener = { fn, when: 'before' };
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /** Told at every look, once this process uses what changed; returns the way to stop. */
  afterUse(fn: PkiListener): () => void {
    const l: Listener = { fn, when: 'after' };
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  get listening() {
    return this.listeners.size > 0;
  }

  /** Look now, then every `everyMs`. */
  start(everyMs = CHECK_MS) {
    void this.check().catch(() => {});
    this.timer = setInterval(() => void this.check().catch(() => {}), everyMs);
    this.timer.unref();
  }

  stop() {
    clearInterval(this.timer);
  }

  /** One look: what is due is renewed, what another controller renewed adopted, spent keys dropped. */
  check(): Promise<CheckOutcome> {
    return this.serial(() => this.run());
  }

  /** `ztc pki renew`: replace it now (a failure is thrown, and is an event too). */
  renew(target: RenewTarget): Promise<CheckOutcome> {
    return this.serial(() => this.run(target));
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.queue.then(f, f);
    this.queue = run.catch(() => {});
    return run;
  }

  private event(e: Omit<PkiEvent, 'namespace' | 'event_src_id' | 'timestamp'>) {
    this.ctx.events.emit(this.ctx.events.stamp<PkiEvent>({ namespace: 'pki', ...e }));
  }

  private async run(asked?: RenewTarget): Promise<CheckOutcome> {
    const ctx = this.ctx;
    const { dataDir, hostnames } = ctx.config;
    const now = ctx.clock.now().getTime();
    const before = { server: sha256Fingerprint(ctx.pki.serverPem), intermediate: sha256Fingerprint(ctx.pki.intermediatePem), kid: ctx.pki.signingJwk.kid };
    const out: CheckOutcome = { renewed: [], dropped: [], resigned: 0, changed: false };
    let fresh: Pki | undefined;
    let failed = false;
    const step = async (certificate: string, fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (e) {
        failed = true;
        const error = (e as Error).message;
        this.failure = { at: iso(new Date(now)), certificate, error };
        this.log.warn({ certificate, err: error }, `pki: the ${certificate} could not be renewed (tried again at the next check)`);
        this.event({ event_type: 'renewal-failed', certificate, error, ...(asked ? { reason: 'operator' } : {}) });
        if (asked) throw e;
      }
    };

    // pki/ replaced on disk beside this process (`ztc pki renew` in local mode): taken up as it is.
    if (!asked && (fileFingerprint(dataDir, 'server.pem') !== before.server || fileFingerprint(dataDir, 'intermediate.pem') !== before.intermediate)) {
      await step('server', async () => {
        fresh = await loadOrCreatePki(dataDir, hostnames, () => {}, { keepServer: true, now });
        if (fresh.intermediatePem !== ctx.pki.intermediatePem) out.renewed.push({ certificate: 'intermediate', reason: 'files' });
        out.renewed.push({ certificate: 'server', reason: 'files' });
      });
    }

    // The network's intermediate: another controller's replacement, or ours when it is due.
    const current = () => fresh ?? ctx.pki;
    await step('intermediate', async () => {
      if (fresh) return;
      const theirs = await replacementOf(ctx);
      if (theirs) {
        fresh = await renewPki(dataDir, hostnames, 'intermediate', { now, intermediate: theirs });
        out.renewed.push({ certificate: 'intermediate', reason: 'adopted' });
        return;
      }
      if (asked === 'intermediate' || (!asked && now >= renewAt(current().intermediatePem))) {
        const next = makeIntermediate(dataDir, now);
        const won = await claimReplacement(ctx, next);
        const use = won ? next : await replacementOf(ctx);
        if (!use) throw new Error('another controller claimed the renewal of the intermediate, but its replacement cannot be read');
        fresh = await renewPki(dataDir, hostnames, 'intermediate', { now, intermediate: use });
        out.renewed.push({ certificate: 'intermediate', reason: won ? (asked ? 'operator' : 'due') : 'adopted' });
        return;
      }
      await publishIntermediate(ctx);
    });

    // The server certificate (its key signs every JWT): renewed with a new intermediate already.
    await step('server', async () => {
      if (fresh) {
        if (!out.renewed.some((r) => r.certificate === 'server')) out.renewed.push({ certificate: 'server', reason: out.renewed[0].reason });
        return;
      }
      if (asked === 'server' || asked === 'signer' || (!asked && now >= renewAt(ctx.pki.serverPem))) {
        fresh = await renewPki(dataDir, hostnames, 'server', { now });
        out.renewed.push({ certificate: 'server', reason: asked ? 'operator' : 'due' });
      }
    });

    // Replaced keys nothing valid can carry any more.
    await step('signing-key', async () => {
      const spent: SigningKey[] = [];
      for (const k of current().signingKeys) if (k.retiredAt !== undefined && !(await keptFor(ctx, k, now))) spent.push(k);
      if (!spent.length) return;
      dropKeys(dataDir, spent.map((k) => k.kid), now);
      fresh = await loadOrCreatePki(dataDir, hostnames, () => {}, { keepServer: true, now });
      out.dropped = spent.map((k) => k.kid);
    });

    const tell = async (when: Listener['when']) => {
      for (const l of this.listeners) {
        if (l.when !== when) continue;
        try {
          await l.fn({ now, changed: out.changed });
        } catch (e) {
          // The data plane's thread (its ports, the keys it gives routers, its router's certificate).
          failed = true;
          const error = (e as Error).message;
          this.failure = { at: iso(new Date(now)), certificate: 'data-plane', error };
          this.log.warn({ err: error }, 'pki: the data plane could not take up the certificates (tried again at the next check)');
          this.event({ event_type: 'renewal-failed', certificate: 'data-plane', error });
        }
      }
    };
    if (fresh) {
      out.changed = true;
      // Announced before used (upstream bug #4116: a key signs only once the routers know it): the
      // other controllers read this row (their APIs and their routers' data model hear of it within a
      // second or two), the data plane's thread sends it to the routers connected here; then this
      // process signs with it.
      await step('server', async () => {
        await publishCertificates(ctx, fresh!);
        await tell('before');
        if (out.renewed.length && (await onlineControllerCount(ctx)) > 1) await new Promise((r) => setTimeout(r, ANNOUNCE_MS));
        out.resigned = await usePki(ctx, fresh!);
      });
      for (const r of out.renewed) {
        const pem = r.certificate === 'server' ? ctx.pki.serverPem : ctx.pki.intermediatePem;
        const previous = r.certificate === 'server' ? before.server : before.intermediate;
        this.event({
          event_type: 'renewed', certificate: r.certificate, reason: r.reason, fingerprint: sha256Fingerprint(pem), previous_fingerprint: previous,
          not_after: new Date(new X509Certificate(pem).validTo).toISOString(), renews_at: iso(new Date(renewAt(pem))),
          ...(r.certificate === 'server' ? { kid: ctx.pki.signingJwk.kid, previous_kid: before.kid } : {}),
        });
        this.log.info({ certificate: r.certificate, reason: r.reason, renewsAt: iso(new Date(renewAt(pem))) }, `pki: the ${r.certificate} certificate was renewed`);
      }
      for (const kid of out.dropped) {
        this.event({ event_type: 'key-dropped', certificate: 'signing-key', kid });
        this.log.info({ kid }, 'pki: a replaced signing key was withdrawn (nothing it signed is valid any more)');
      }
      if (out.resigned) this.log.info({ count: out.resigned }, 're-signed outstanding enrollment JWT(s) with the new server key: hand out the new ones (ztc enrollment list)');
    } else {
      // Every look reaches the data plane: it renews its own router's certificate by it.
      await tell('before');
    }
    await tell('after');
    this.lastCheckAt = iso(new Date(now));
    if (!failed) this.failure = undefined;
    return out;
  }
}
