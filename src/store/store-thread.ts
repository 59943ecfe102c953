// What the worker threads that open the store share (the data plane's, fabric/worker.ts; a large
// import's, model/import-worker.ts): where their program is, and what each does first (a lower
// priority, and in the single executable the better-sqlite3 addon, which every thread loads for itself).
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { setSqliteNativeBinding } from './sqlite-driver.js';

/**
 * The thread's program: the file the single executable unpacked (`embedded`, set by
 * scripts/sea-loader.cjs), else the first of `candidates` (relative to `base`, the caller's
 * import.meta.url) that exists: compiled, beside the caller; bundled (dist/src/bundle/), in a
 * sibling folder; run from the TypeScript sources (vitest), the compiled copy in dist/.
 */
export function threadProgram(embedded: string | undefined, candidates: string[], base: string): URL | string | undefined {
  if (embedded) return embedded;
  for (const candidate of candidates) {
    const url = new URL(candidate, base);
    if (fs.existsSync(fileURLToPath(url))) return url;
  }
  return undefined;
}

/** In the single executable: the better-sqlite3 addon it unpacked, for a thread to load (undefined otherwise). */
export const sqliteAddonFile = () => (globalThis as { __ztcSqliteAddon?: string }).__ztcSqliteAddon;

/** A nice value from the environment (0 to 19; 10 when unset or not a number). */
export const niceFrom = (value: string | undefined) => Math.min(19, Math.max(0, Number(value ?? 10) || 0));

/**
 * First thing in a thread that opens the store: lower its priority to `nice` (on Linux a thread has its
 * own nice value, and setPriority sets the caller's: when both want the CPU, the API thread gets it), and
 * load the addon the single executable unpacked, if any.
 */
export function prepareStoreThread(nice: number, sqliteAddon: string | undefined) {
  try {
    os.setPriority(nice);
  } catch {
    // Not permitted or not supported: the API thread's priority.
  }
  if (sqliteAddon) {
    const m = { exports: {} };
    process.dlopen(m as never, sqliteAddon);
    setSqliteNativeBinding(m.exports);
  }
}
