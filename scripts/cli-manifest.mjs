// After tsc: write dist/cli-manifest.json, what the CLI reads of the resource declarations
// (see src/cli/manifest.ts), so commands start without loading the model.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dist');
const { buildManifest, MANIFEST_FILE } = await import(path.join(dist, 'src/cli/manifest.js'));
fs.writeFileSync(path.join(dist, MANIFEST_FILE), JSON.stringify(await buildManifest()));
