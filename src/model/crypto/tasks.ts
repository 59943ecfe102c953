// The CPU-heavy crypto steps of request handling, as plain synchronous functions: the worker pool
// (pool.ts) runs them off the event loop, and they give the same results run in this thread.
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { fingerprintOf, issueCertificate } from '../pki/certs.js';
import { parseCsr } from '../pki/csr.js';

const KEYLEN = 32;
const maxmem = (p: { N: number; r: number }) => 256 * p.N * p.r;

/** `cost` is log2 of scrypt's N (hashCost() in password.ts); r=8, p=1. */
function hashPassword(password: string, cost: number): string {
  const params = { N: 2 ** cost, r: 8, p: 1 };
  const salt = randomBytes(16);
  const key = scryptSync(password, salt, KEYLEN, { ...params, maxmem: maxmem(params) });
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Verified with the cost the stored hash names; `cost` is for the decoy work when there is none. */
function verifyPassword(password: string, stored: string | null | undefined, cost: number): boolean {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') {
    // Same work as a real check, so a missing user answers no faster than a wrong password.
    hashPassword(password, cost);
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
