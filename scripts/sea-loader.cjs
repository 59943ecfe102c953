// The single executable's main script (Node's SEA runs CommonJS): unpack the embedded program and the
// better-sqlite3 addon into a private cache dir once per build, load the addon, import the program.
const sea = require('node:sea');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const app = Buffer.from(sea.getRawAsset('app'));
const addon = Buffer.from(sea.getRawAsset('sqlite'));
const routerWorker = Buffer.from(sea.getRawAsset('router-worker'));
const importWorker = Buffer.from(sea.getRawAsset('import-worker'));
const checkpointWorker = Buffer.from(sea.getRawAsset('checkpoint-worker'));
const id = crypto.createHash('sha256').update(app).update(addon).update(routerWorker).update(importWorker).update(checkpointWorker).digest('hex').slice(0, 16);
const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
const dir = path.join(os.tmpdir(), `ztc-${uid}-${id}`);
const appFile = path.join(dir, 'app.mjs');
const addonFile = path.join(dir, 'better_sqlite3.node');
const routerFile = path.join(dir, 'router-worker.mjs');
const importFile = path.join(dir, 'import-worker.mjs');
const checkpointFile = path.join(dir, 'checkpoint-worker.mjs');
if (![appFile, addonFile, routerFile, importFile, checkpointFile].every((f) => fs.existsSync(f))) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Write under temporary names, then rename: a concurrent start never sees half a file.
  for (const [file, data] of [[addonFile, addon], [routerFile, routerWorker], [importFile, importWorker], [checkpointFile, checkpointWorker], [appFile, app]]) {
    const tmp = `${file}.${process.pid}`;
    fs.writeFileSync(tmp, data, { mode: 0o700 });
    fs.renameSync(tmp, file);
  }
}
// The API reference's static files (served at /docs) and the CLI's view of the resources, kept in memory.
globalThis.__ztcAssets = {
  'swagger-ui.css': sea.getAsset('swagger-ui.css', 'utf8'),
  'swagger-ui-bundle.js': sea.getAsset('swagger-ui-bundle.js', 'utf8'),
  'swagger-ui-standalone-preset.js': sea.getAsset('swagger-ui-standalone-preset.js', 'utf8'),
  'cli-manifest.json': sea.getAsset('cli-manifest.json', 'utf8'),
};
// The crypto worker threads' program, run from source (model/crypto/pool.ts).
globalThis.__ztcCryptoWorker = sea.getAsset('crypto-worker', 'utf8');
const m = { exports: {} };
process.dlopen(m, addonFile);
globalThis.__ztcSqliteBinding = m.exports;
// The edge router's thread, a large import's and the WAL checkpoints' run from their unpacked files and
// load the same addon (fabric/thread.ts, model/import-thread.ts, store/checkpointer.ts).
globalThis.__ztcRouterWorker = routerFile;
globalThis.__ztcImportWorker = importFile;
globalThis.__ztcCheckpointWorker = checkpointFile;
globalThis.__ztcSqliteAddon = addonFile;
import(pathToFileURL(appFile).href).catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
