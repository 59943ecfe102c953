// A sliding-window store for @fastify/rate-limit. Its built-in store counts in fixed windows, so a
// client that spends its budget at the end of one window and again at the start of the next gets
// twice the limit through in a moment. Here a key's count is the current window's count plus the
// previous window's, weighted by how much of it still lies within the last `timeWindow` ms: at most
// about `max` requests pass in any window, wherever it starts. Only requests let through are counted,
// so a client that slows down is served again as the window slides. O(1) memory per key, at most MAX_KEYS keys (least recently used go first).

interface Counts {
  /** Start of the current fixed window (ms). */
  start: number;
  current: number;
  previous: number;
}

type Callback = (err: Error | null, res: { current: number; ttl: number }) => void;

const MAX_KEYS = 20_000;

export class SlidingWindowStore {
  /** Least recently used first (a Map keeps insertion order; each write re-inserts). */
  private readonly keys = new Map<string, Counts>();

  // The plugin constructs the store with its options; none are needed here.
  constructor(_options?: unknown) {}

  child(): SlidingWindowStore {
    return new SlidingWindowStore();
  }

  /** The key's counts as of `now` (windows rolled forward), as a new object. */
  private counts(key: string, now: number, window: number): Counts {
    const c = this.keys.get(key);
    if (!c) return { start: now, current: 0, previous: 0 };
    const elapsedWindows = Math.floor((now - c.start) / window);
    if (elapsedWindows < 1) return { ...c };
    return { start: c.start + elapsedWindows * window, current: 0, previous: elapsedWindows === 1 ? c.current : 0 };
  }

  private save(key: string, c: Counts) {
    this.keys.delete(key);
    this.keys.set(key, c);
    if (this.keys.size > MAX_KEYS) this.keys.delete(this.keys.keys().next().value as string);
  }

  incr(key: string, cb: Callback, window: number, max: number) {
    const now = Date.now();
    const c = this.counts(key, now, window);
    const elapsed = now - c.start;
    const weighted = c.previous * (1 - elapsed / window) + c.current;
    if (weighted + 1 > max) {
      this.save(key, c);
      return cb(null, { current: max + 1, ttl: this.wait(c, elapsed, window, max) });
    }
    c.current++;
    this.save(key, c);
    cb(null, { current: Math.min(max, Math.ceil(weighted + 1)), ttl: window - elapsed });
  }

  read(key: string, cb: Callback, window: number) {
    if (!this.keys.has(key)) return cb(null, { current: 0, ttl: 0 });
    const now = Date.now();
    const c = this.counts(key, now, window);
    const elapsed = now - c.start;
    cb(null, { current: Math.ceil(c.previous * (1 - elapsed / window) + c.current), ttl: window - elapsed });
  }

  /** How long until one more request fits (for Retry-After). */
  private wait(c: Counts, elapsed: number, window: number, max: number): number {
    if (c.current <= max - 1 && c.previous > 0) {
      // previous * (1 - (elapsed + d) / window) + current <= max - 1
      return Math.max(1, Math.ceil((1 - (max - 1 - c.current) / c.previous) * window - elapsed));
    }
    // The current window is full: after it ends, its count decays until one more fits.
    return Math.max(1, window - elapsed + Math.ceil(window / Math.max(1, max)));
  }
}
