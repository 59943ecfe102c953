// Passwords: scrypt (memory-hard) with a per-password salt, computed on the crypto worker pool
// (model/crypto) so a burst of logins neither stalls other requests nor queues without end.
import { runCrypto } from '../crypto/pool.js';

export const hashPassword = (password: string): Promise<string> => runCrypto('hashPassword', [password]);

/** Does the password match the stored hash? A missing or foreign hash costs the same work and says no. */
export const verifyPassword = (password: string, stored: string | null | undefined): Promise<boolean> => runCrypto('verifyPassword', [password, stored]);
