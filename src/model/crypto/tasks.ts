// The CPU-heavy crypto steps of request handling, as plain synchronous functions: the worker pool
// (pool.ts) runs them off the event loop, and they give the same results run in this thread.
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { fingerprintOf, issueCertificate } from '../pki/certs.js';
import { parseCsr } from '../pki/csr.js';

// N=2^15, r=8: 32 MiB and ~50-100 ms per hash on a small server core (OWASP's scrypt floor is N=2^17 r=8 p=1
// or an equivalent cost; we keep N=2^15 with p=1 for login throughput and let the format carry the cost).
const PARAMS = { N: 1 << 15, r: 8, p: 1 };
const KEYLEN = 32;
const maxmem = (p: { N: number; r: number }) => 256 * p.N * p.r;

function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const key = scryptSync(password, salt, KEYLEN, { ...PARAMS, maxmem: maxmem(PARAMS) });
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

function verifyPassword(password: string, stored: string | null | undefined): boolean {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') {
    // Same work as a real check, so a missing user answers no faster than a wrong password.
    hashPassword(password);
    return false;
  }
  const [, n, r, p, salt, hash] = parts;
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  const expected = Buffer.from(hash, 'base64');
  const key = scryptSync(password, Buffer.from(salt, 'base64'), expected.length, { ...params, maxmem: maxmem(params) });
  return timingSafeEqual(key, expected);
}

export interface SignCsrInput {
  csrPem: string;
  commonName: string;
  issuerPem: string;
  issuerKeyPem: string;
  days: number;
  usage: 'client' | 'server' | 'server+client';
  /** Host names for the certificate; `fromCsr` takes the request's own (or its CN, or localhost). */
  sans?: string[] | 'fromCsr';
}

export interface SignedCsr {
  pem: string;
  fingerprint: string;
  /** The subjectAltName entries the certificate carries. */
  sans: string[];
}

/** Check a PKCS#10 request and issue a certificate for its key (CN ours, not the request's). */
function signCsr(o: SignCsrInput): SignedCsr {
  const csr = parseCsr(o.csrPem);
  const sans = o.sans === 'fromCsr' ? (csr.sans.length ? csr.sans : [csr.commonName ?? 'localhost']) : (o.sans ?? []);
  const pem = issueCertificate({ commonName: o.commonName, publicKey: { spki: csr.spki }, issuerPem: o.issuerPem, issuerKeyPem: o.issuerKeyPem, days: o.days, usage: o.usage, sans });
  return { pem, fingerprint: fingerprintOf(pem), sans };
}

export const cryptoTasks = { hashPassword, verifyPassword, signCsr };
export type CryptoTasks = typeof cryptoTasks;
export type CryptoTask = keyof CryptoTasks;
