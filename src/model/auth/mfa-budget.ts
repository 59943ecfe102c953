// Wrong MFA codes are budgeted as wrong passwords are. A TOTP code is one of a million, and ±2 steps
// make five of them right at any moment: unbudgeted, 300 guesses a minute from each of N addresses find
// one within days, and the password was already known. So:
// - per identity (whatever session or address the codes come from), the password budget's rule: 10 free
//   failures, then each attempt waits twice as long as the one before, up to 5 minutes (429 with
//   Retry-After); a right code restores it;
// - per API session waiting for its code, MAX_PARTIAL_FAILURES wrong codes end that session: the
//   guesser must log in again, paying the password budget too.
// Both on the controller's monotonic clock, per process and bounded, like the password budget.
import type { Ctx } from '../context.js';
import { LoginBudget } from './login-budget.js';

export const MAX_PARTIAL_FAILURES = 5;
const MAX_TRACKED_SESSIONS = 100_000;

// Keyed by the controller's event hub, which the per-request copies of the context share (server/actor.ts).
const budgets = new WeakMap<Ctx['events'], LoginBudget>();
const sessionFailures = new WeakMap<Ctx['events'], Map<string, number>>();

/** The per-identity budget of MFA code attempts of this controller. */
export function mfaBudget(ctx: Ctx): LoginBudget {
  let b = budgets.get(ctx.events);
  if (!b) {
    b = new LoginBudget(() => ctx.clock.monotonic(), 'Too many wrong MFA codes for this identity');
    budgets.set(ctx.events, b);
  }
  return b;
}

/** Count a wrong code on a partial API session; returns how many it has had. */
export function failOnSession(ctx: Ctx, apiSessionId: string): number {
  let m = sessionFailures.get(ctx.events);
  if (!m) sessionFailures.set(ctx.events, (m = new Map()));
  const n = (m.get(apiSessionId) ?? 0) + 1;
  m.delete(apiSessionId);
  m.set(apiSessionId, n);
  // Oldest first in the Map: beyond the bound, forget the longest-untouched (its session has expired by then).
  if (m.size > MAX_TRACKED_SESSIONS) m.delete(m.keys().next().value as string);
  return n;
}

export function forgetSession(ctx: Ctx, apiSessionId: string) {
  sessionFailures.get(ctx.events)?.delete(apiSessionId);
}
