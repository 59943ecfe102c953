// The TLS server's secure context: the controller's certificate and the CAs client certificates may
// chain to, with the protocol and cipher policy. Used at start and again when `pki renew` swaps it live
// (setSecureContext replaces the whole context, so the policy must be given again).
import type { Pki } from '../model/pki/pki.js';

export const TLS_CIPHERS = [
  'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256', 'TLS_AES_128_GCM_SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305', 'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256',
].join(':');

export const secureContextOptions = (pki: Pki) => ({
  key: pki.serverKeyPem,
  cert: pki.serverPem + pki.intermediatePem,
  // Client certificates from the current intermediate, or from one replaced that has not expired.
  ca: [pki.intermediatePem, ...pki.retiredIntermediatePems, pki.rootPem],
  minVersion: 'TLSv1.2' as const,
  // Forward-secret AEAD suites only (TLS 1.3's, and ECDHE with GCM or ChaCha20 for 1.2).
  ciphers: TLS_CIPHERS,
  honorCipherOrder: true,
});
