// Password hashing (scrypt: ~32 MiB and tens of milliseconds of CPU each) runs a few at a time, so a
// burst of logins can take at most HASH_CONCURRENCY threads of the libuv pool and that many cores,
// never all of them: other requests keep being served. Beyond the running ones, at most HASH_QUEUE
// wait their turn; more are refused at once with 429 instead of piling up.
//
// Kept as one small module with one entry point (runHash) so the work can move to a worker pool
// without its callers changing.
import os from 'node:os';
import { ApiError } from '../errors.js';

/** Leave at least one core to the event loop. */
export const HASH_CONCURRENCY = Math.max(1, Math.min(4, os.availableParallelism() - 1));
export const HASH_QUEUE = 64;

let running = 0;
const waiting: (() => void)[] = [];

/** Run one hash computation when a slot is free; 429 when too many already wait. */
export async function runHash<T>(work: () => Promise<T>): Promise<T> {
  if (running >= HASH_CONCURRENCY) {
    if (waiting.length >= HASH_QUEUE) {
      throw new ApiError(429, 'RATE_LIMITED', 'The controller is busy checking other passwords: try again in a moment', undefined, { headers: { 'retry-after': '1' } });
    }
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else running++;
  try {
    return await work();
  } finally {
    // Hand the slot straight to the next in line (running stays the same), or free it.
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}
