// Counting what a request costs the store: the tests that hold a hot read to a number of statements.
import type { TestController } from './controller.js';

/**
 * The statements the store runs while `fn` runs (the store's own per-query hook, which the metrics use).
 * Events of earlier writes are written out first: their audit rows are batched and written a moment
 * after the write, and the posture response's batch landing inside `fn` counted as one more statement
 * (seen once in CI on a slow run).
 */
export async function statementsOf(c: TestController, fn: () => Promise<unknown>): Promise<number> {
  await c.opened.ctx.events.flush();
  const times = c.opened.ctx.store.queryTimes;
  const before = times.observer;
  let n = 0;
  times.observer = (ms, failed) => {
    n++;
    before?.(ms, failed);
  };
  try {
    await fn();
  } finally {
    times.observer = before;
  }
  return n;
}
