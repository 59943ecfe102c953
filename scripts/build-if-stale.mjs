#!/usr/bin/env node
// npm start: build only when something the build reads is newer than its last output
// (dist/cli-manifest.json, written last), so a second start does not spend seconds in tsc.
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const output = path.join(root, 'dist', 'cli-manifest.json');

function newest(p) {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...fs.readdirSync(p).map((name) => newest(path.join(p, name))));
}

const built = fs.statSync(output, { throwIfNoEntry: false })?.mtimeMs ?? 0;
const inputs = ['src', 'bench', 'test/peers', 'tsconfig.json', 'package.json', 'scripts/cli-manifest.mjs'].map((p) => newest(path.join(root, p)));
if (!built || Math.max(...inputs) > built) {
  process.stderr.write(built ? '… sources changed since the last build: npm run build\n' : '… first start: npm run build\n');
  execSync('npm run build', { cwd: root, stdio: 'inherit' });
}
