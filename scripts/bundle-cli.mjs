#!/usr/bin/env node
// npm run build, last step: the CLI and `ztc serve` bundled beside the compiled program
// (dist/src/bundle/), which bin/ztc loads. Node resolves and reads a few files instead of ~800
// (ours, Kysely's, fastify's), which halves the start of a command that opens the store (a local
// `ztc identity list -d DIR` went from 0.95 s to under 0.5 s). Split at the program's dynamic
// imports, as the compiled program is, so `ztc version` still loads only what it needs. The worker
// threads still run from dist/src (their paths are found relative to the bundle's directory, a
// sibling of dist/src/cli), and better-sqlite3 stays a require: its addon is found from its package.
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { esmBundle } from './esbuild-options.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const outdir = path.join(root, 'dist/src/bundle');
// Chunks are named by their content: an earlier build's would pile up.
fs.rmSync(outdir, { recursive: true, force: true });
await build({
  ...esmBundle,
  entryPoints: [path.join(root, 'src/cli/main.ts')],
  outdir,
  outExtension: { '.js': '.mjs' },
  splitting: true,
  chunkNames: 'chunk-[hash]',
  external: ['better-sqlite3', 'pg-native'],
});
