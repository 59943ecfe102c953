#!/usr/bin/env node
// npm run build, last step: the CLI and `ztc serve` as one ES module beside the compiled program
// (dist/src/cli/main.bundle.mjs), which bin/ztc loads. Node resolves and reads one file instead of
// ~800 (ours, Kysely's, fastify's), which halves the start of every command (a local
// `ztc identity list -d DIR` went from 0.95 s to under 0.5 s). The worker threads still run from
// dist/src (their paths are found relative to this file), and better-sqlite3 stays a require: its
// addon is found from its own package.
import path from 'node:path';
import { build } from 'esbuild';
import { esmBundle } from './esbuild-options.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
await build({
  ...esmBundle,
  entryPoints: [path.join(root, 'src/cli/main.ts')],
  outfile: path.join(root, 'dist/src/cli/main.bundle.mjs'),
  external: ['better-sqlite3', 'pg-native'],
});
