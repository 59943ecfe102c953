// Secrets the controller must read back (TOTP secrets, recovery codes, outstanding enrollment JWTs)
// are sealed at rest with AES-256-GCM under a key kept in the data dir (pki/secrets.key, 0600), so a
// copy of the database alone reveals none of them. Secrets it only compares (passwords, API session
// and one-time tokens) are stored as hashes instead.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const PREFIX = 'v1:';

export interface Sealer {
  seal(plain: string): string;
  /** The plain text of a sealed value (a value stored before sealing existed is returned as is). */
  open(stored: string): string;
  isSealed(stored: string): boolean;
}

export function sealerFromKey(key: Buffer): Sealer {
  if (key.length !== 32) throw new Error('the secrets key must be 32 bytes');
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
    },
    open(stored) {
      if (!stored.startsWith(PREFIX)) return stored;
      const raw = Buffer.from(stored.slice(PREFIX.length), 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      try {
        return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
      } catch {
        throw new Error('a sealed secret cannot be opened: is pki/secrets.key the one this database was written with?');
      }
    },
    isSealed: (stored) => stored.startsWith(PREFIX),
  };
}

/** The data dir's key (made on first use). Controllers sharing a database share pki/, and so this key. */
export function loadSealer(pkiDir: string): Sealer {
  const file = path.join(pkiDir, 'secrets.key');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(pkiDir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}`;
    fs.writeFileSync(tmp, randomBytes(32).toString('base64'), { mode: 0o600 });
    // Two first starts at once: the first rename wins, the other controller reads its key.
    try {
      fs.linkSync(tmp, file);
    } catch {
      // already there
    }
    fs.rmSync(tmp, { force: true });
  }
  return sealerFromKey(Buffer.from(fs.readFileSync(file, 'utf8').trim(), 'base64'));
}
