// Losing access ends traffic: the data plane's watch on what identities may use. Every write that can
// change any identity's access moves one marker in the store (model/changes.ts), on whichever controller
// made it; this looks at the marker twice a second and, when it moved, has the model revoke the sessions
// no longer granted (model/policy/enforce.ts), then tells the data plane at once (its routers' checks
// for edge-router access, the ends of revoked sessions) instead of at its next second's sweep. Posture
// checks also fail with time (an MFA timeout), so they are judged every few seconds even when nothing
// moved. Measured end to end: a deleted Dial policy ends a live circuit within about a second.
import type { Ctx } from '../model/context.js';
import { accessChangedAt, enforceAccess, type Revocation } from '../model/policy/enforce.js';
import type { FabricLog } from './fabric.js';

/** How often the marker is looked at. */
export const WATCH_MS = 500;
/** How often posture is judged when nothing moved. */
const POSTURE_MS = 5000;

export class AccessWatch {
  private seen: string | undefined;
  private postureAt = 0;
  private running = false;
  private timer?: NodeJS.Timeout;

  constructor(
    readonly ctx: Ctx,
    readonly log: FabricLog,
    /** Called after every pass that found a change or revoked something: the data plane looks again now. */
    readonly changed: (revoked: Revocation[]) => void,
  ) {}

  start() {
    this.timer = setInterval(() => void this.tick(), WATCH_MS);
    this.timer.unref();
  }

  stop() {
    clearInterval(this.timer);
  }

  /** One look (the timer's; tests call it to wait for a pass). */
  async tick() {
    if (this.running) return;
    this.running = true;
    try {
      const at = await accessChangedAt(this.ctx);
      const moved = at !== this.seen;
      const postureDue = Date.now() - this.postureAt >= POSTURE_MS;
      if (!moved && !postureDue) return;
      const revoked = moved ? await enforceAccess(this.ctx, { posture: true }) : await enforceAccess(this.ctx, { posture: true, grants: false });
      this.seen = at;
      this.postureAt = Date.now();
      for (const r of revoked) this.log.info({ session: r.id, identity: r.identityId, service: r.serviceId, type: r.type, reason: r.reason }, 'access: session revoked');
      if (moved || revoked.length) this.changed(revoked);
    } catch (e) {
      this.log.warn({ err: String(e) }, 'access: could not check what identities may still use');
    } finally {
      this.running = false;
    }
  }
}
