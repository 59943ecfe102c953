#!/usr/bin/env node
// npm run package: dist/ztc, one file that runs `serve` and every subcommand without Node or
// node_modules. Offline: esbuild bundles the program, Node's single-executable support embeds it
// (and the better-sqlite3 addon) into a copy of this node binary with postject.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { esmBundle, nodeBundle } from './esbuild-options.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const out = path.join(root, 'dist', 'sea');
fs.mkdirSync(out, { recursive: true });
const step = (s) => process.stderr.write(`… ${s}\n`);

step('bundling the program (esbuild)');
await build({
  entryPoints: [path.join(root, 'src/sea/entry.ts')],
  outfile: path.join(out, 'app.mjs'),
  ...esmBundle,
});

// The crypto worker threads' program (src/model/crypto/worker.ts) as one CommonJS script: the
// executable starts them from this source (Worker eval), as it cannot hand them a file to load.
step('bundling the crypto worker (esbuild)');
await build({
  entryPoints: [path.join(root, 'src/model/crypto/worker.ts')],
  outfile: path.join(out, 'crypto-worker.cjs'),
  ...nodeBundle,
  format: 'cjs',
});

// The program's threads, each an ES module of its own: the loader unpacks them beside the program and
// the controller starts each from its file. The edge router's; a large import's (without it the
// executable ran large imports on the API thread, which then answered nobody else for seconds at a
// time); the WAL checkpoints' (without it the API connection checkpointed inside its own commits, the
// event loop stopped meanwhile).
const threads = { 'router-worker': 'src/fabric/worker.ts', 'import-worker': 'src/model/import-worker.ts', 'checkpoint-worker': 'src/store/checkpoint-worker.ts' };
for (const [name, entry] of Object.entries(threads)) {
  step(`bundling the ${name.replace('-worker', '')} thread (esbuild)`);
  await build({ entryPoints: [path.join(root, entry)], outfile: path.join(out, `${name}.mjs`), ...esmBundle });
}

step('preparing the single-executable blob');
const addon = path.join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node');
fs.copyFileSync(path.join(root, 'scripts/sea-loader.cjs'), path.join(out, 'loader.cjs'));
const config = {
  main: path.join(out, 'loader.cjs'),
  output: path.join(out, 'ztc.blob'),
  disableExperimentalSEAWarning: true,
  assets: {
    app: path.join(out, 'app.mjs'),
    'crypto-worker': path.join(out, 'crypto-worker.cjs'),
    ...Object.fromEntries(Object.keys(threads).map((name) => [name, path.join(out, `${name}.mjs`)])),
    sqlite: addon,
    'swagger-ui.css': path.join(root, 'node_modules/swagger-ui-dist/swagger-ui.css'),
    'swagger-ui-bundle.js': path.join(root, 'node_modules/swagger-ui-dist/swagger-ui-bundle.js'),
    'swagger-ui-standalone-preset.js': path.join(root, 'node_modules/swagger-ui-dist/swagger-ui-standalone-preset.js'),
    'cli-manifest.json': path.join(root, 'dist/cli-manifest.json'),
  },
};
fs.writeFileSync(path.join(out, 'sea-config.json'), JSON.stringify(config, null, 2));
execFileSync(process.execPath, ['--experimental-sea-config', path.join(out, 'sea-config.json')], { stdio: 'inherit' });

step('injecting it into a copy of node');
const exe = path.join(root, 'dist', 'ztc');
fs.copyFileSync(process.execPath, exe);
fs.chmodSync(exe, 0o755);
const injected = spawnSync(path.join(root, 'node_modules/.bin/postject'), [exe, 'NODE_SEA_BLOB', config.output, '--sentinel-fuse', 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'], { encoding: 'utf8' });
// postject warns about every ELF note section it cannot name ("Can't find string offset for section
// name ..."), which is harmless on Linux: show its output only when it fails, or what it says besides.
const notes = (injected.stdout + injected.stderr).replace(/\x1b\[[0-9;]*m/g, '').split('\n').filter((l) => l.trim() && !/Can't find string offset for section name|^(Start injection|Injection done|💉)/.test(l.trim()));
if (injected.status !== 0) {
  process.stderr.write(injected.stdout + injected.stderr);
  throw new Error(`postject failed (exit ${injected.status})`);
}
if (notes.length) process.stderr.write(notes.join('\n') + '\n');
const mb = (fs.statSync(exe).size / 1048576).toFixed(1);
step(`done: ${path.relative(process.cwd(), exe)} (${mb} MB)`);
