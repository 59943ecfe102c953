// Passwords: scrypt (memory-hard, in Node's crypto, runs on the libuv pool) with a per-password salt.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { runHash } from './hash-slots.js';

// Every hash takes one of the few hash slots (hash-slots.ts), whoever asks for it.
const scrypt = (pw: string, salt: Buffer, len: number, opts: ScryptOptions) =>
  runHash(() => new Promise<Buffer>((resolve, reject) => scryptCb(pw, salt, len, opts, (err, key) => (err ? reject(err) : resolve(key)))));

// N=2^15, r=8: 32 MiB and ~50-100 ms per hash on a small server core (OWASP's scrypt floor is N=2^17 r=8 p=1
// or an equivalent cost; we keep N=2^15 with p=1 for login throughput and let the format carry the cost).
const PARAMS = { N: 1 << 15, r: 8, p: 1 };
const KEYLEN = 32;
const maxmem = (p: { N: number; r: number }) => 256 * p.N * p.r;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { ...PARAMS, maxmem: maxmem(PARAMS) });
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') {
    // Same work as a real check, so a missing user answers no faster than a wrong password.
    await hashPassword(password);
    return false;
  }
  const [, n, r, p, salt, hash] = parts;
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  const expected = Buffer.from(hash, 'base64');
  const key = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, { ...params, maxmem: maxmem(params) });
  return timingSafeEqual(key, expected);
}
