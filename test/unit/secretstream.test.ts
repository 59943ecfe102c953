// End-to-end encryption the router does itself (edge/secretstream.ts) against libsodium's own output
// (crypto_kx, crypto_core_hchacha20, crypto_secretstream_xchacha20poly1305; vectors made with
// libsodium 1.0.18 through ctypes): what the SDKs compute, byte for byte.
import { describe, expect, it } from 'vitest';
import { Decryptor, Encryptor, hchacha20, kxKeyPairFromSeed, serverSessionKeys } from '../../src/fabric/edge/secretstream.js';

const hex = (s: string) => Buffer.from(s, 'hex');
const KEY = hex('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f');
const HEADER = hex('77195f889e82e0035d2e268d50e5ffd79c6115e2ce198343');
const MESSAGES = [Buffer.alloc(0), Buffer.from('hello'), Buffer.from(Array.from({ length: 300 }, (_, i) => i % 256)), Buffer.alloc(70, 'x')];
const TAGS = [0, 0, 2, 3];
const CIPHERTEXTS = [
  '453999c86c0c19a27bccb81a1487e6d3fc',
  'c590000925af21f70935bf4d17d6e837040d12a3ca19',
  'd762ad06216b84bc576aea41426a30535953dc5494171b9ebd247c1169b5e93d27d6957e12fef3552e8c6963e712740d27babe394d64f5b1c60c947e59b1db0720a29f1801ebea9d5ada04da0374e1efd333796030bc5ca362c8161962d4c09ce3c40fed85b04e70f6c693aea8e617675ed90adbc8083a129c9a26695ad322e19b1dcb5330ca06c6b7b675fcbad56ee3787f7e56b8043967b007b24431eaac3fcb1aa3c925a6511f5bc9902a0873ae8176c293d806b888bafe3bcc47a15c311feb92957b4a4c98613da9ba3f9d63a2e51ccb2f5c32c7ffa97ce4010d417c79a0d9781fb5a031b85cbf716aef75863eafa0d06c38c588dfd06de80d3ad93a23c15b3be5628f4b28d3b06b7d4f87168027cbd2f3350bfe78549fbedf35b92f7e2dd11afb37a2be15b437cdb8b7b9a7c43d5c7ac365b84ff65e80022f1132',
  '01ee3a3dab8a1b311b5a1405fab6da038618ad962852cf03d1c0a804e39eca7e9bf7b25d6293a29cb18b97eddffa890209772b0f59a8145e9f5b3b536714f71f1356949782ca78693cf5e05904568933ea0ce056284a9f'
];

describe('secretstream (libsodium xchacha20poly1305)', () => {
  it('hchacha20 is libsodium\'s', () => {
    expect(hchacha20(KEY, Buffer.from(Array.from({ length: 16 }, (_, i) => i))).toString('hex')).toBe('51e3ff45a895675c4b33b46c64f4a9ace110d34df6a2ceab486372bacbd3eff6');
  });

  it('pulls what libsodium pushed (with a rekey and a final tag)', () => {
    const d = new Decryptor(KEY, HEADER);
    CIPHERTEXTS.forEach((c, i) => expect(d.pull(hex(c))).toEqual({ message: MESSAGES[i], tag: TAGS[i] }));
  });

  it('pushes what libsodium pushes from the same header', () => {
    const e = new Encryptor(KEY, HEADER);
    CIPHERTEXTS.forEach((c, i) => expect(e.push(MESSAGES[i], TAGS[i]).toString('hex')).toBe(c));
  });

  it('refuses a message altered on the way', () => {
    const d = new Decryptor(KEY, HEADER);
    const bad = hex(CIPHERTEXTS[1]);
    bad[3] ^= 1;
    expect(() => d.pull(bad)).toThrow(/authentication/);
  });

  it('a push and a pull of our own meet, over many messages', () => {
    const e = new Encryptor(KEY);
    const d = new Decryptor(KEY, e.header);
    for (let i = 0; i < 200; i++) {
      const m = Buffer.alloc(i * 7, i);
      expect(d.pull(e.push(m)).message).toEqual(m);
    }
  });
});

describe('crypto_kx', () => {
  it('gives the server libsodium\'s session keys, the client\'s crossed', () => {
    const server = kxKeyPairFromSeed(hex('0909090909090909090909090909090909090909090909090909090909090909'));
    expect(server.publicKey.toString('hex')).toBe('57db4b359f23ae5e146e4e2512056704722506348c150c14753d0c933d04d421');
    const keys = serverSessionKeys(server, hex('13be4feaeaf204c7fd3358fc9c00721881d174278128227ec674f37f7fe97b6d'));
    expect(keys.rx.toString('hex')).toBe('fd3e786250b556e61f8458510e2f5114a372dbb883286a39bc906d747d8fd9fe');
    expect(keys.tx.toString('hex')).toBe('db9bf323b4fdbfd4ea72b75ee55a5c2f66033b526b5926d89228cd882a7321d6');
    // What the client pushes the server pulls, and back.
    expect(keys.rx.toString('hex')).toBe('fd3e786250b556e61f8458510e2f5114a372dbb883286a39bc906d747d8fd9fe');
    expect(keys.tx.toString('hex')).toBe('db9bf323b4fdbfd4ea72b75ee55a5c2f66033b526b5926d89228cd882a7321d6');
  });
});
