/** The controller reads time through this, so tests can move it forward instead of sleeping. */
export interface Clock {
  now(): Date;
  /**
   * Milliseconds from an arbitrary origin that never go back: for durations (back-off, budgets), which a
   * wall clock stepped by an operator or NTP would stretch or cut.
   */
  monotonic(): number;
}

export const systemClock: Clock = { now: () => new Date(), monotonic: () => performance.now() };

export class ManualClock implements Clock {
  private t: number;
  constructor(start = Date.now()) {
    this.t = start;
  }
  /** Durations follow advance() only: setting the wall time (set()) leaves them alone, as a real monotonic clock does. */
  private mono = 0;
  now() {
    return new Date(this.t);
  }
  monotonic() {
    return this.mono;
  }
  advance(ms: number) {
    this.t += ms;
    this.mono += Math.max(0, ms);
  }
  /** Step the wall clock (as an operator or NTP would), leaving durations untouched. */
  set(at: number) {
    this.t = at;
  }
}

export const iso = (d: Date) => d.toISOString();
