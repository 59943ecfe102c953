import { createHash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

// The CSPRNG's bytes for ids, drawn 4 KB at a time and each used once: a create makes three ids (the
// entity's, its event's, its audit row's), and a call to the CSPRNG apiece cost more than the rest of
// making them. Secrets (newSecret) still come straight from randomBytes.
const pool = Buffer.alloc(4096);
let used = pool.length;
function randomByte(): number {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  return pool[used++];
}

/** Short random url-safe id, like upstream's (10 chars, ~59 bits, from the CSPRNG). */
export function newId(length = 10): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    // 248 = 4 * 62: drop the top values so every character is equally likely.
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
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
