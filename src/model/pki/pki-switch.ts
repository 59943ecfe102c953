// Replacing files of pki/ so that a crash at any moment leaves either the old set or the new one.
// Several files cannot be renamed at once, so the switch is journaled, as a database commits:
//   1. the new files are written beside the old (NAME.new), synced to disk;
//   2. the journal pki/renew-pending.json names the moves and is renamed into place: the commit point;
//   3. each old file moves to pki/retired/, each NAME.new to NAME; then the journal goes.
// A crash before 2 leaves the old files in use and some NAME.new, which the next start drops; a crash
// after 2 is finished by the next start (every step is idempotent). A pki/ that neither explains,
// such as an intermediate gone while retired/ holds the one it replaced (what a crash of the
// unjournaled renewal of earlier versions left), stops the start with the way to recover: creating a
// new intermediate there, as on a first start, would break every enrolled identity's chain.
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const JOURNAL = 'renew-pending.json';
const STAGED = '.new';
const RETIRED = 'retired';

/** pki/ is in a state no interrupted switch explains: the message says how to recover. */
export class HalfRenewedPki extends Error {}

export interface NewFile {
  /** The file's name in pki/ (intermediate.pem, server.key, ...). */
  name: string;
  data: string;
  /** A private key: mode 0600. */
  secret?: boolean;
}

interface Journal {
  at: number;
  what: string;
  /** Files of pki/ to replace; the old one of each goes to retired/<base>-<at><ext>. */
  names: string[];
}

function writeSynced(file: string, data: string, mode: number) {
  const fd = fs.openSync(file, 'w', mode);
  try {
    fs.writeFileSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.chmodSync(file, mode);
}

/** Renames are durable only once their directory is synced. */
function syncDir(dir: string) {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

const retiredName = (name: string, at: number) => `${path.basename(name, path.extname(name))}-${at}${path.extname(name)}`;

/** Steps 1 and 2: after this returns, the switch happens (now, or at the next start if this process dies). */
export function commitSwitch(dir: string, at: number, what: string, files: NewFile[]): Journal {
  dropStaged(dir);
  for (const f of files) writeSynced(path.join(dir, f.name + STAGED), f.data, f.secret ? 0o600 : 0o644);
  syncDir(dir);
  const journal: Journal = { at, what, names: files.map((f) => f.name) };
  const tmp = path.join(dir, `${JOURNAL}.tmp`);
  writeSynced(tmp, JSON.stringify(journal), 0o600);
  fs.renameSync(tmp, path.join(dir, JOURNAL));
  syncDir(dir);
  return journal;
}

/** Step 3, idempotent: a file already switched (no NAME.new left) is skipped. */
export function applySwitch(dir: string, journal: Journal) {
  const folder = path.join(dir, RETIRED);
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  for (const name of journal.names) {
    const staged = path.join(dir, name + STAGED);
    if (!fs.existsSync(staged)) continue;
    const current = path.join(dir, name);
    if (fs.existsSync(current)) fs.renameSync(current, path.join(folder, retiredName(name, journal.at)));
    fs.renameSync(staged, current);
  }
  syncDir(folder);
  syncDir(dir);
  fs.rmSync(path.join(dir, JOURNAL));
  syncDir(dir);
}

/** Remove NAME.new files (and a journal's temporary file) of a switch that never committed. */
function dropStaged(dir: string): string[] {
  const dropped = fs.readdirSync(dir).filter((n) => n.endsWith(STAGED) || n === `${JOURNAL}.tmp`);
  for (const n of dropped) fs.rmSync(path.join(dir, n));
  return dropped;
}

function readJournal(dir: string): Journal {
  const file = path.join(dir, JOURNAL);
  try {
    const j = JSON.parse(fs.readFileSync(file, 'utf8')) as Journal;
    if (typeof j.at === 'number' && Array.isArray(j.names) && j.names.every((n) => typeof n === 'string' && !n.includes('/'))) return j;
  } catch {
    // Reported below: the journal is renamed into place whole, so this is damage, not a crash.
  }
  throw new HalfRenewedPki(`${file} (the record of an interrupted certificate renewal) cannot be read. Restore pki/ from a backup, or remove the file if pki/intermediate.pem, intermediate.key, server.pem and server.key are all present and whole`);
}

/**
 * At start, before pki/ is read: finish a committed switch, drop an uncommitted one, and refuse a pki/
 * whose intermediate is missing or does not match its key.
 */
export function settlePki(dir: string, progress: (step: string) => void) {
  if (fs.existsSync(path.join(dir, JOURNAL))) {
    const journal = readJournal(dir);
    progress(`finishing the renewal of the ${journal.what} interrupted at ${new Date(journal.at).toISOString()}`);
    applySwitch(dir, journal);
  } else if (dropStaged(dir).length) {
    progress('dropped the files of a certificate renewal interrupted before it switched: the current certificates stay');
  }
  checkPair(dir, 'intermediate');
  checkPair(dir, 'server');
}

/** A certificate and its key belong together, and an intermediate is never silently replaced. */
function checkPair(dir: string, base: 'intermediate' | 'server') {
  const pem = path.join(dir, `${base}.pem`);
  const key = path.join(dir, `${base}.key`);
  const hasPem = fs.existsSync(pem);
  const hasKey = fs.existsSync(key);
  if (hasPem && hasKey) {
    if (!matches(fs.readFileSync(pem, 'utf8'), fs.readFileSync(key, 'utf8'))) {
      throw new HalfRenewedPki(`${key} is not the key of ${pem}: pki/ holds parts of two generations. Put back the pair that belongs together (pki/retired/ keeps each replaced ${base} as ${base}-<time>.pem and .key) or restore pki/ from a backup, then start again`);
    }
    return;
  }
  // The server certificate is remade from the intermediate whenever it is missing; a missing
  // intermediate is only created on a first start, which a retired one shows this is not.
  if (base === 'server' || !fs.existsSync(path.join(dir, 'root.pem'))) return;
  const folder = path.join(dir, RETIRED);
  const retired = fs.existsSync(folder) ? fs.readdirSync(folder).filter((n) => /^intermediate-\d+\.(pem|key)$/.test(n)).sort().reverse() : [];
  if (!retired.length && !(hasPem || hasKey)) return;
  const latest = (ext: string) => retired.find((n) => n.endsWith(ext));
  const steps = [
    ...(hasPem ? [] : latest('.pem') ? [`  mv ${path.join(folder, latest('.pem')!)} ${pem}`] : []),
    ...(hasKey ? [] : latest('.key') ? [`  mv ${path.join(folder, latest('.key')!)} ${key}`] : []),
  ];
  const missing = [hasPem ? '' : 'intermediate.pem', hasKey ? '' : 'intermediate.key'].filter(Boolean).join(' and ');
  throw new HalfRenewedPki(
    `pki/ is half-renewed: ${missing} ${missing.includes(' and ') ? 'are' : 'is'} missing from ${dir}, so a renewal of the intermediate was interrupted ` +
      `(or files were moved by hand). Starting would create an unrelated intermediate, as on a first start, and break the chain of every enrolled identity and router, so ztc stops. ` +
      (steps.length
        ? `To recover, put the replaced intermediate back:\n${steps.join('\n')}\nthen start again (and run \`ztc pki renew intermediate\` again if you still want a new one).`
        : `Restore ${missing} from a backup of pki/, then start again.`),
  );
}

function matches(certPem: string, keyPem: string): boolean {
  try {
    const fromCert = new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' });
    const fromKey = createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' });
    return fromCert.equals(fromKey);
  } catch {
    return false;
  }
}
