// better-sqlite3, loaded so that the single executable can hand it the embedded native addon.
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

type Ctor = typeof BetterSqlite3;
type Options = BetterSqlite3.Options;

let nativeBinding: unknown;

/** Set by the single-executable launcher: the addon object it loaded with process.dlopen. */
export function setSqliteNativeBinding(binding: unknown) {
  nativeBinding = binding;
}

export function loadSqlite(): new (file: string, opts?: Options) => BetterSqlite3.Database {
  const require = createRequire(import.meta.url);
  const Database = require('better-sqlite3') as Ctor;
  if (!nativeBinding) return Database;
  return function open(file: string, opts?: Options) {
    return new Database(file, { ...opts, nativeBinding: nativeBinding as string });
  } as unknown as Ctor;
}
