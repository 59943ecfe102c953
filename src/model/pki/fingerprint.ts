// The one fingerprint form shown to people: SHA-256 of the certificate's DER, lower-case hex pairs
// joined by colons (d6:a9:75:...). The login prompt, `ztc pki status`, `ztc status` and the serve banner
// all print it, so the CA a client is asked to trust can be compared with what the server shows.
// (Authenticators keep upstream's SHA-1 `fingerprint` field: that is wire contract, not display.)
import { createHash, X509Certificate } from 'node:crypto';

export function sha256Fingerprint(pem: string): string {
  return createHash('sha256').update(new X509Certificate(pem).raw).digest('hex').match(/../g)!.join(':');
}
