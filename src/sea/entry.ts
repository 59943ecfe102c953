// Entry of the single executable's bundled program: the loader (scripts/sea-loader.cjs) has already
// loaded the embedded better-sqlite3 addon and left it on globalThis.
import { main } from '../cli/main.js';
import { setSqliteNativeBinding } from '../store/sqlite-driver.js';

const binding = (globalThis as { __ztcSqliteBinding?: unknown }).__ztcSqliteBinding;
if (binding) setSqliteNativeBinding(binding);
await main(process.argv);
