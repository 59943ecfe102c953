// A budget of password attempts per username, whatever address they come from: the per-address rate
// limit alone lets a botnet (or two addresses at once) guess one account's password at full speed.
// The first FREE_ATTEMPTS attempts cost nothing; after them each attempt must wait twice as long as the
// one before (1 s after the 10th, then 2 s, 4 s ... up to MAX_DELAY_MS). A wait is answered with 429 before any hash is computed,
// so guessing costs the attacker time and the controller nothing. A successful login clears the budget.
//
// Every attempt is counted when it starts (and forgiven when it succeeds), so a burst of concurrent
// guesses cannot all slip in before the first failure is recorded. Unknown usernames are budgeted the
// same way, so the answer says nothing about which usernames exist. State is per process and bounded.
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';

export const FREE_ATTEMPTS = 10;
export const BASE_DELAY_MS = 1_000;
export const MAX_DELAY_MS = 5 * 60_000;
/** An account nobody tried for this long starts afresh. */
export const FORGET_AFTER_MS = 15 * 60_000;
const MAX_TRACKED = 100_000;

interface Entry {
  attempts: number;
  /** No attempt is taken before this time (on the budget's monotonic clock). */
  notBefore: number;
  last: number;
}

export class LoginBudget {
  private readonly entries = new Map<string, Entry>();

  /** `refusal` opens the 429's message: what failed too often (password logins, MFA codes). */
  constructor(
    private readonly now: () => number,
    private readonly refusal = 'Too many failed logins for this username',
  ) {}

  /** Take one attempt for `username` (or any account key), or throw 429 saying how long to wait. */
  take(username: string): void {
    const now = this.now();
    let e = this.entries.get(username);
    if (e && now - e.last > FORGET_AFTER_MS && now >= e.notBefore) e = undefined;
    if (e && now < e.notBefore) {
      const seconds = Math.ceil((e.notBefore - now) / 1000);
      throw new ApiError(429, 'RATE_LIMITED', `${this.refusal}: try again in ${seconds} s`, undefined, { headers: { 'retry-after': String(seconds) } });
    }
    e ??= { attempts: 0, notBefore: 0, last: now };
    e.attempts++;
    e.last = now;
    if (e.attempts >= FREE_ATTEMPTS) e.notBefore = now + Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** Math.min(30, e.attempts - FREE_ATTEMPTS));
    // Re-insert so the Map's order is least recently used first, and drop the oldest beyond the bound.
    this.entries.delete(username);
    this.entries.set(username, e);
    if (this.entries.size > MAX_TRACKED) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** The password was right: the account's budget is whole again. */
  succeeded(username: string): void {
    this.entries.delete(username);
  }
}

// Keyed by the controller's event hub, which the per-request copies of the context share (server/actor.ts).
const budgets = new WeakMap<Ctx['events'], LoginBudget>();

/** The budget of this controller (one per opened data dir, on its clock's monotonic time). */
export function loginBudget(ctx: Ctx): LoginBudget {
  let b = budgets.get(ctx.events);
  if (!b) {
    // Durations on the monotonic clock: stepping the wall clock back a day must not mean a day's wait.
    b = new LoginBudget(() => ctx.clock.monotonic());
    budgets.set(ctx.events, b);
  }
  return b;
}
