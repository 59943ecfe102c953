// End-to-end encryption as OpenZiti's SDKs do it (libsodium's crypto_kx and
// crypto_secretstream_xchacha20poly1305), for the one place the router is an end: a terminator the
// router itself serves (binding edge_transport: the router dials the address and is the dialer's peer,
// as upstream's xgress_edge_transport does with SetupServerCrypto). Built on node:crypto's X25519,
// BLAKE2b-512 and ChaCha20; HChaCha20 and Poly1305 are written out here (node:crypto has ChaCha20-Poly1305
// only as RFC 8439's AEAD, whose padding secretstream does not follow).
import { createCipheriv, createHash, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

export const KEY_BYTES = 32;
export const HEADER_BYTES = 24;
/** What each message grows by: the tag byte and the 16-byte MAC. */
export const A_BYTES = 17;
export const TAG_MESSAGE = 0;
export const TAG_REKEY = 2;

/** An X25519 key pair as libsodium's crypto_kx holds it: 32 raw bytes each. */
export interface KxKeyPair {
  publicKey: Buffer;
  privateKey: KeyObject;
}

export function kxKeyPair(): KxKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  return { publicKey: Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'), privateKey };
}

/** The raw X25519 private key (for tests that compare with libsodium). */
export function kxKeyPairFromSeed(secret: Buffer): KxKeyPair {
  const privateKey = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), secret]), format: 'der', type: 'pkcs8' });
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return { publicKey: Buffer.from(jwk.x!, 'base64url'), privateKey };
}

/**
 * crypto_kx_server_session_keys: rx and tx of the server side, from the client's public key (32 bytes).
 * Throws on a key of the wrong size or one that gives no shared secret.
 */
export function serverSessionKeys(server: KxKeyPair, clientPublic: Buffer): { rx: Buffer; tx: Buffer } {
  if (clientPublic.length !== 32) throw new Error(`the peer's public key has ${clientPublic.length} bytes, not 32`);
  const peer = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: clientPublic.toString('base64url') }, format: 'jwk' });
  const q = diffieHellman({ privateKey: server.privateKey, publicKey: peer });
  if (q.every((b) => b === 0)) throw new Error('the peer\'s public key gives no shared secret');
  const keys = createHash('blake2b512').update(q).update(clientPublic).update(server.publicKey).digest();
  return { tx: keys.subarray(0, 32), rx: keys.subarray(32, 64) };
}

const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574];
const rotl = (v: number, c: number) => (v << c) | (v >>> (32 - c));

/** crypto_core_hchacha20: a 32-byte subkey from a key and 16 bytes of input. */
export function hchacha20(key: Buffer, input: Buffer): Buffer {
  const x = new Uint32Array(16);
  x.set(SIGMA);
  for (let i = 0; i < 8; i++) x[4 + i] = key.readUInt32LE(i * 4);
  for (let i = 0; i < 4; i++) x[12 + i] = input.readUInt32LE(i * 4);
  const qr = (a: number, b: number, c: number, d: number) => {
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);
    x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);
    x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);
  };
  for (let i = 0; i < 10; i++) {
    qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15);
    qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14);
  }
  const out = Buffer.allocUnsafe(32);
  for (let i = 0; i < 4; i++) out.writeUInt32LE(x[i], i * 4);
  for (let i = 0; i < 4; i++) out.writeUInt32LE(x[12 + i], 16 + i * 4);
  return out;
}

/** ChaCha20 (IETF, 12-byte nonce) from block `counter`, XORed into `data`. */
function chacha20(key: Buffer, nonce: Buffer, counter: number, data: Buffer): Buffer {
  const iv = Buffer.allocUnsafe(16);
  iv.writeUInt32LE(counter, 0);
  nonce.copy(iv, 4);
  return createCipheriv('chacha20', key, iv).update(data);
}

/** One direction of a secretstream: its key, and its nonce (a 4-byte counter, then 8 bytes). */
class Stream {
  protected k: Buffer;
  protected nonce = Buffer.alloc(12);

  constructor(key: Buffer, header: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`a secretstream key has ${KEY_BYTES} bytes`);
    if (header.length !== HEADER_BYTES) throw new Error(`a secretstream header has ${HEADER_BYTES} bytes, not ${header.length}`);
    this.k = hchacha20(key, header.subarray(0, 16));
    this.nonce.writeUInt32LE(1, 0);
    header.copy(this.nonce, 4, 16, 24);
  }

  /** After each message: the MAC folds into the nonce, the counter moves, a rekey when asked or when it wraps. */
  protected next(mac: Buffer, tag: number) {
    for (let i = 0; i < 8; i++) this.nonce[4 + i] ^= mac[i];
    const counter = (this.nonce.readUInt32LE(0) + 1) >>> 0;
    this.nonce.writeUInt32LE(counter, 0);
    if (tag & TAG_REKEY || counter === 0) this.rekey();
  }

  private rekey() {
    const both = chacha20(this.k, this.nonce, 0, Buffer.concat([this.k, this.nonce.subarray(4, 12)]));
    this.k = both.subarray(0, 32);
    both.copy(this.nonce, 4, 32, 40);
    this.nonce.writeUInt32LE(1, 0);
  }
}

const MASK_128 = (1n << 128n) - 1n;
const P_1305 = (1n << 130n) - 5n;
const CLAMP = 0x0ffffffc0ffffffc0ffffffc0fffffffn;
const le128 = (b: Buffer, at: number) => b.readBigUInt64LE(at) | (b.readBigUInt64LE(at + 8) << 64n);

/**
 * Poly1305 (crypto_onetimeauth_poly1305): the accumulator in ten 13-bit limbs, so every product and sum
 * stays an exact double; the key's r clamped, s added at the end.
 */
export class Poly1305 {
  private h = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  private d = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  private r = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  private r5 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  private s: bigint;
  private buf = Buffer.alloc(16);
  private left = 0;

  constructor(key: Buffer) {
    const r = le128(key, 0) & CLAMP;
    for (let i = 0; i < 10; i++) {
      this.r[i] = Number((r >> BigInt(13 * i)) & 0x1fffn);
      this.r5[i] = 5 * this.r[i];
    }
    this.s = le128(key, 16);
  }

  update(data: Buffer): this {
    let at = 0;
    if (this.left) {
      const n = Math.min(16 - this.left, data.length);
      data.copy(this.buf, this.left, 0, n);
      this.left += n;
      at = n;
      if (this.left < 16) return this;
      this.block(this.buf, 0, 1 << 11);
      this.left = 0;
    }
    for (; at + 16 <= data.length; at += 16) this.block(data, at, 1 << 11);
    if (at < data.length) {
      data.copy(this.buf, 0, at);
      this.left = data.length - at;
    }
    return this;
  }

  digest(): Buffer {
    if (this.left) {
      this.buf[this.left] = 1;
      this.buf.fill(0, this.left + 1);
      this.block(this.buf, 0, 0);
      this.left = 0;
    }
    let h = 0n;
    for (let i = 9; i >= 0; i--) h = (h << 13n) + BigInt(this.h[i]);
    const tag = ((h % P_1305) + this.s) & MASK_128;
    const out = Buffer.allocUnsafe(16);
    out.writeBigUInt64LE(tag & ((1n << 64n) - 1n), 0);
    out.writeBigUInt64LE(tag >> 64n, 8);
    return out;
  }

  /** h = (h + m) * r mod 2^130 - 5, for one 16-byte block (hibit: the 2^128 of a full block). */
  private block(m: Buffer, at: number, hibit: number) {
    const h = this.h;
    const t0 = m[at] | (m[at + 1] << 8), t1 = m[at + 2] | (m[at + 3] << 8), t2 = m[at + 4] | (m[at + 5] << 8), t3 = m[at + 6] | (m[at + 7] << 8);
    const t4 = m[at + 8] | (m[at + 9] << 8), t5 = m[at + 10] | (m[at + 11] << 8), t6 = m[at + 12] | (m[at + 13] << 8), t7 = m[at + 14] | (m[at + 15] << 8);
    h[0] += t0 & 0x1fff;
    h[1] += ((t0 >>> 13) | (t1 << 3)) & 0x1fff;
    h[2] += ((t1 >>> 10) | (t2 << 6)) & 0x1fff;
    h[3] += ((t2 >>> 7) | (t3 << 9)) & 0x1fff;
    h[4] += ((t3 >>> 4) | (t4 << 12)) & 0x1fff;
    h[5] += (t4 >>> 1) & 0x1fff;
    h[6] += ((t4 >>> 14) | (t5 << 2)) & 0x1fff;
    h[7] += ((t5 >>> 11) | (t6 << 5)) & 0x1fff;
    h[8] += ((t6 >>> 8) | (t7 << 8)) & 0x1fff;
    h[9] += (t7 >>> 5) | hibit;
    const r = this.r, r5 = this.r5, d = this.d;
    for (let i = 0; i < 10; i++) {
      let sum = 0;
      for (let j = 0; j <= i; j++) sum += h[j] * r[i - j];
      for (let j = i + 1; j < 10; j++) sum += h[j] * r5[i + 10 - j];
      d[i] = sum;
    }
    let c = 0;
    for (let i = 0; i < 10; i++) {
      const v = d[i] + c;
      c = Math.floor(v / 8192);
      h[i] = v - c * 8192;
    }
    h[0] += 5 * c;
    c = Math.floor(h[0] / 8192);
    h[0] -= c * 8192;
    h[1] += c;
  }
}

const ZEROS = Buffer.alloc(128);
const le64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeUInt32LE(n >>> 0, 0);
  b.writeUInt32LE(Math.floor(n / 2 ** 32), 4);
  return b;
};

/** libsodium's MAC of one message: the encrypted tag block, the ciphertext, its odd padding, the lengths. */
function mac(polyKey: Buffer, block: Buffer, c: Buffer): Buffer {
  return new Poly1305(polyKey)
    .update(block)
    .update(c)
    .update(ZEROS.subarray(0, (0x10 - 64 + c.length) & 0xf))
    .update(le64(0))
    .update(le64(64 + c.length))
    .digest();
}

export class Encryptor extends Stream {
  /** The header the peer needs first (sent as the stream's first data message). */
  readonly header: Buffer;

  constructor(key: Buffer, header: Buffer = randomBytes(HEADER_BYTES)) {
    super(key, header);
    this.header = header;
  }

  push(message: Buffer, tag = TAG_MESSAGE): Buffer {
    // One key stream from block 0: the MAC's key, the tag block (block 1), the message (from block 2).
    const plain = Buffer.alloc(128 + message.length);
    plain[64] = tag;
    message.copy(plain, 128);
    const all = chacha20(this.k, this.nonce, 0, plain);
    const block = all.subarray(64, 128);
    const c = all.subarray(128);
    const m = mac(all.subarray(0, 32), block, c);
    const out = Buffer.allocUnsafe(1 + c.length + 16);
    out[0] = block[0];
    c.copy(out, 1);
    m.copy(out, 1 + c.length);
    this.next(m, tag);
    return out;
  }
}

export class Decryptor extends Stream {
  /** The message and its tag; throws when it does not authenticate (the stream is then unusable). */
  pull(input: Buffer): { message: Buffer; tag: number } {
    if (input.length < A_BYTES) throw new Error(`a secretstream message has at least ${A_BYTES} bytes, not ${input.length}`);
    const stream = chacha20(this.k, this.nonce, 0, ZEROS);
    // The tag block as it was sent: its first byte travelled, the rest is the key stream over zeros.
    const block = Buffer.from(stream.subarray(64, 128));
    block[0] = input[0];
    const c = input.subarray(1, input.length - 16);
    const expected = mac(stream.subarray(0, 32), block, c);
    if (!timingSafeEqual(expected, input.subarray(input.length - 16))) throw new Error('a secretstream message failed authentication');
    const tag = input[0] ^ stream[64];
    const message = chacha20(this.k, this.nonce, 2, c);
    this.next(expected, tag);
    return { message, tag };
  }
}
