// A damaged SQLite file must not be served: answering from it gives wrong answers, and writing to it
// spreads the damage. At start the file is opened read-only and SQLite's quick_check runs (it reads
// every page once, so its time grows with the file but stays a fraction of integrity_check's); the
// full integrity_check (which also compares every index with its table) is part of `ztc db check`.
import fs from 'node:fs';
import path from 'node:path';
import { loadSqlite } from './sqlite-driver.js';

/** The database cannot be used as it is; the message says what to do. Shown to the operator as is. */
export class DamagedDatabase extends Error {}

/** Snapshots in the data dir, newest first. */
function snapshots(file: string): string[] {
  const dir = path.join(path.dirname(file), 'snapshots');
  try {
    return fs.readdirSync(dir).filter((f) => f.endsWith('.db')).sort().reverse().map((f) => path.join(dir, f));
  } catch {
    return [];
  }
}

export function damaged(file: string, problems: string[]): DamagedDatabase {
  const latest = snapshots(file)[0];
  const restore = latest
    ? `restore the latest snapshot (${latest}): stop every controller using this data dir, then\n  mv ${file} ${file}.damaged && rm -f ${file}-wal ${file}-shm && cp ${latest} ${file}`
    : `there is no snapshot in ${path.join(path.dirname(file), 'snapshots')}: restore ${path.basename(file)} from your backups (with the controller stopped, copy it over ${file} and delete ${file}-wal and ${file}-shm)`;
  return new DamagedDatabase(
    `the database ${file} is damaged (SQLite: ${problems.slice(0, 5).join('; ')}). ztc will not serve from it or write to it.\n` +
      `To recover, ${restore}\n` +
      `then start the controller again and run \`ztc db check\`.`,
  );
}

/** quick_check on a read-only connection; throws DamagedDatabase when the file is not sound. A missing file is fine (it will be created). */
export function quickCheck(file: string): void {
  if (!fs.existsSync(file)) return;
  const Sqlite = loadSqlite();
  let conn: InstanceType<ReturnType<typeof loadSqlite>> | undefined;
  try {
    conn = new Sqlite(file, { readonly: true, fileMustExist: true });
    const rows = conn.pragma('quick_check(20)') as { quick_check: string }[];
    const problems = rows.map((r) => r.quick_check).filter((r) => r !== 'ok');
    if (problems.length) throw damaged(file, problems);
  } catch (e) {
    if (e instanceof DamagedDatabase) throw e;
    // Corrupt (SQLITE_CORRUPT*) or not a database at all (SQLITE_NOTADB): refuse, anything else is another problem.
    const code = String((e as { code?: string }).code ?? '');
    if (/^SQLITE_(CORRUPT|NOTADB)/.test(code)) throw damaged(file, [(e as Error).message]);
    throw e;
  } finally {
    conn?.close();
  }
}

/** The full integrity_check of an open connection: SQLite's complaints, or none. */
export function integrityProblems(conn: { pragma: (s: string) => unknown }, max = 100): string[] {
  const rows = conn.pragma(`integrity_check(${max})`) as { integrity_check: string }[];
  return rows.map((r) => r.integrity_check).filter((r) => r !== 'ok');
}
