// better-sqlite3, loaded so that the single executable can hand it the embedded native addon.
import Database from 'better-sqlite3';

type Options = Database.Options;

let nativeBinding: unknown;

/** Set by the single-executable launcher: the addon object it loaded with process.dlopen. */
export function setSqliteNativeBinding(binding: unknown) {
  nativeBinding = binding;
}

export function loadSqlite(): new (file: string, opts?: Options) => Database.Database {
  if (!nativeBinding) return Database;
  return function open(file: string, opts?: Options) {
    // better-sqlite3 accepts the loaded addon object itself (a path would need a real require).
    return new Database(file, { ...opts, nativeBinding: nativeBinding as string });
  } as unknown as typeof Database;
}
