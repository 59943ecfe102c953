// One `ztc serve` per data dir: a second one on the same SQLite file would share its database but not
// its per-process state (the password budgets, doubling the guesses allowed) and fight for its ports.
// The lock is a file holding the pid; one left by a process that died is taken over.
import fs from 'node:fs';
import path from 'node:path';
import { processAlive } from '../model/maintenance/integrity.js';

export class DataDirBusy extends Error {}

/** Data dirs this process serves (a lock naming our own pid is ours only if we took it). */
const held = new Set<string>();

/** Take the data dir for this process; returns the release. Throws DataDirBusy naming the holder's pid. */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'serve.lock');
  const key = path.resolve(dataDir);
  if (held.has(key)) throw new DataDirBusy(`This process (pid ${process.pid}) already serves the data dir ${dataDir}: give the second controller its own data dir (--data-dir).`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      held.add(key);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        // Not left behind on the process: a process that serves and stops many times (the tests) gathered
        // one 'exit' listener per start (Node's MaxListenersExceededWarning in CI).
        process.removeListener('exit', release);
        held.delete(key);
        try {
          if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.rmSync(file);
        } catch {
          // Already gone.
        }
      };
      process.once('exit', release);
      return release;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const pid = Number(fs.readFileSync(file, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
        throw new DataDirBusy(`Another ztc serve (pid ${pid}) is already serving the data dir ${dataDir}: stop it first, or give this one its own data dir (--data-dir).`);
      }
      // Left by a process that is gone: take it over.
      fs.rmSync(file, { force: true });
    }
  }
  throw new DataDirBusy(`Could not take ${file}: remove it if no ztc serve is running`);
}

/** The pid of another live process serving this data dir (its lock), if one does. */
export function servingPid(dataDir: string): number | undefined {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'serve.lock'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}
