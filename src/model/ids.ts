import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Short random url-safe id, like upstream's (10 chars, ~59 bits, from the CSPRNG). */
export function newId(length = 10): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (let i = 0; i < bytes.length && out.length < length; i++) {
    // 248 = 4 * 62: drop the top values so every character is equally likely.
    if (bytes[i] < 248) out += ALPHABET[bytes[i] % 62];
  }
  return out.length === length ? out : out + newId(length - out.length);
}

/** A bearer secret (API session tokens, one-time tokens): 256 random bits. */
export const newSecret = (): string => randomBytes(32).toString('base64url');

/** Secrets are stored as their SHA-256 so a copy of the database does not hand out sessions. */
export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('base64url');

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
