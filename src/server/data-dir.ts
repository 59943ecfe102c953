// The data dir must be writable (database, WAL, keys, snapshots, controller id): find out at start and
// name the path, instead of failing later with a system error's stack trace.
import fs from 'node:fs';
import path from 'node:path';

/** A data dir (or a directory in it) that cannot be written; the message names the path and the cause. */
export class DataDirNotWritable extends Error {}

const WHY: Record<string, string> = {
  EROFS: 'it is on a read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOTDIR: 'a part of the path is a file, not a directory',
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is exhausted',
};

function notWritable(dir: string, e: unknown): DataDirNotWritable {
  const code = (e as NodeJS.ErrnoException).code ?? '';
  return new DataDirNotWritable(`${dir} is not writable (${WHY[code] ?? (e as Error).message}${code && WHY[code] ? `, ${code}` : ''}): ztc keeps its database, keys and snapshots there; give it a writable directory with --data-dir`);
}

/** Create `dir` (0700) if needed and prove a file can be written in it. */
export function ensureWritableDir(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chmodSync(dir, 0o700);
    const probe = path.join(dir, `.ztc-write-test-${process.pid}`);
    fs.writeFileSync(probe, '');
    fs.rmSync(probe);
  } catch (e) {
    throw notWritable(dir, e);
  }
}

/** A controller's data dir opened without the database that controller keeps its data in. */
export class DatabaseElsewhere extends Error {}

/**
 * A data dir that a controller served (its pki/ and controller-id are there) but that holds no SQLite
 * database keeps its data on PostgreSQL: opened without --db, a new empty SQLite database would be
 * made beside it and used as if it were the network (a password reset that changed nothing, a scan
 * that found no problems in an empty file).
 */
export function refuseMissingDatabase(dataDir: string, db: string | undefined): void {
  if (db) return;
  const has = (f: string) => fs.existsSync(path.join(dataDir, f));
  if (!has('pki') || !has('controller-id') || has('ztc.db')) return;
  throw new DatabaseElsewhere(
    `${dataDir} belongs to a controller (its pki/ and controller-id are there) but holds no SQLite database (ztc.db): its data is in PostgreSQL. ` +
      `Pass that database: --db postgres://... (or ZTC_DB). To start an empty SQLite database here on purpose, delete ${path.join(dataDir, 'controller-id')} first.`,
  );
}
