// Passwords: scrypt (memory-hard) with a per-password salt. Admission is hash-slots.ts's (a few at a
// time, a bounded wait, then 429); the work itself runs on the crypto worker pool (model/crypto), off
// the thread that serves requests.
import { runCrypto } from '../crypto/pool.js';
import { runHash } from './hash-slots.js';

/** scrypt's N as a power of two (r=8, p=1): 2^15 is 32 MiB and ~50-100 ms per hash on a small server core. */
export const DEFAULT_HASH_COST = 15;

/**
 * The cost new hashes get: ZTC_PASSWORD_HASH_COST (10 to 17), read at each hash so a test can raise it
 * for a file. OWASP's scrypt floor is N=2^17 r=8 p=1 or an equivalent; 2^15 keeps login throughput on
 * small hosts. The test suite lowers it (vitest.config.ts): a login there is 8x cheaper and otherwise
 * the same code. Each hash names its own cost, so hashes made at any cost keep verifying. At most 17
 * (128 MiB a hash): the hash slots run a few at once, and 2^20 would take 1 GiB each.
 */
export function hashCost(): number {
  const n = Number(process.env.ZTC_PASSWORD_HASH_COST || DEFAULT_HASH_COST);
  return Number.isInteger(n) && n >= 10 && n <= 17 ? n : DEFAULT_HASH_COST;
}

export const hashPassword = (password: string): Promise<string> => runHash(() => runCrypto('hashPassword', [password, hashCost()]));

/** Does the password match the stored hash? A missing or foreign hash costs the same work and says no. */
export const verifyPassword = (password: string, stored: string | null | undefined): Promise<boolean> =>
  runHash(() => runCrypto('verifyPassword', [password, stored, hashCost()]));
