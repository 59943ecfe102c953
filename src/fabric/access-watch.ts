// Losing access ends traffic: the data plane's watch on what identities may use. Every write that can
// change who is granted what moves the 'access' marker in the store (model/changes.ts), on whichever
// controller made it; posture responses move only the 'services' marker. This looks at both twice a
// second and, when one moved, has the model revoke the sessions no longer granted or no longer passing
// their posture checks (model/policy/enforce.ts), then tells the data plane at once (its routers' checks
// for edge-router access, the ends of revoked sessions) instead of at its next second's sweep. Posture
// checks also fail with time (an MFA timeout), so they are judged every few seconds even when nothing
// moved. A change made through this controller's API wakes it at once (server/controller.ts); the half
// second is for other controllers' changes. Measured by `npm run bench` (bench/access-loss.ts): a
// deleted Dial policy ends a live circuit 10-36 ms (p50) after the API answered; 0.4-0.5 s when it
// waited for the half-second look.
import { accessMarkers } from '../model/changes.js';
import type { Ctx } from '../model/context.js';
import { findRevocations, revokeSessions, type Revocation } from '../model/policy/enforce.js';
import type { FabricLog } from './fabric.js';

/** How often the markers are looked at. */
export const WATCH_MS = 500;
/** How often posture is judged when nothing moved. */
const POSTURE_MS = 5000;

export class AccessWatch {
  private seen?: { access: string; services: string };
  private postureAt = 0;
  /** When the last pass over every grant ended, and what it cost (passes keep to a third of the thread). */
  private grantsAt = 0;
  private grantsMs = 0;
  private running = false;
  private again = false;
  private timer?: NodeJS.Timeout;

  constructor(
    readonly ctx: Ctx,
    readonly log: FabricLog,
    /** Called after every pass that found a change or revoked something: the data plane looks again now. */
    readonly changed: (revoked: Revocation[]) => void,
    /**
     * Called with what is about to be revoked, before the deletions commit: the data plane's own
     * sweep may see the sessions gone before `changed` is called, and must already know why.
     */
    readonly revoking: (list: Revocation[]) => void = () => {},
  ) {}

  start() {
    this.timer = setInterval(() => void this.tick(), WATCH_MS);
    this.timer.unref();
  }

  stop() {
    clearInterval(this.timer);
  }

  /** One look (the timer's, or a nudge after a change made here: one asked during a look runs after it). */
  async tick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      const at = await accessMarkers(this.ctx.store.db);
      // Grants moved: every session is judged again, but a large store's pass (0.2-0.4 s for 100,000
      // sessions on SQLite) runs at most a third of the time, whatever the rate of writes (an import).
      const grants = at.access !== this.seen?.access && Date.now() - this.grantsAt >= 2 * this.grantsMs;
      const posture = grants || at.services !== this.seen?.services || Date.now() - this.postureAt >= POSTURE_MS;
      if (!grants && !posture) return;
      const started = Date.now();
      const found = await findRevocations(this.ctx, { posture: true, grants });
      if (found.length) this.revoking(found);
      const revoked = await revokeSessions(this.ctx, found);
      this.seen = { access: grants ? at.access : (this.seen?.access ?? ''), services: at.services };
      this.postureAt = Date.now();
      if (grants) [this.grantsAt, this.grantsMs] = [Date.now(), Date.now() - started];
      for (const r of revoked) this.log.info({ session: r.id, identity: r.identityId, service: r.serviceId, type: r.type, reason: r.reason }, 'access: session revoked');
      if (grants || revoked.length) this.changed(revoked);
    } catch (e) {
      this.log.warn({ err: String(e) }, 'access: could not check what identities may still use');
    } finally {
      this.running = false;
      if (this.again) {
        this.again = false;
        void this.tick();
      }
    }
  }
}
