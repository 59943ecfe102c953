// Passwords: scrypt (memory-hard) with a per-password salt. Admission is hash-slots.ts's (a few at a
// time, a bounded wait, then 429); the work itself runs on the crypto worker pool (model/crypto), off
// the thread that serves requests.
import { runCrypto } from '../crypto/pool.js';
import { runHash } from './hash-slots.js';

export const hashPassword = (password: string): Promise<string> => runHash(() => runCrypto('hashPassword', [password]));

/** Does the password match the stored hash? A missing or foreign hash costs the same work and says no. */
export const verifyPassword = (password: string, stored: string | null | undefined): Promise<boolean> =>
  runHash(() => runCrypto('verifyPassword', [password, stored]));
