// `npm start` builds only when the sources changed since the last build (a second start used to run
// tsc again: 13 s to the banner instead of 2).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

describe('npm start', () => {
  it('skips the build when dist/ is newer than every source', () => {
    expect(JSON.parse(fs.readFileSync('package.json', 'utf8')).scripts.start).toBe('node scripts/build-if-stale.mjs && exec node bin/ztc serve');
    // The suite runs after `npm run build`: nothing to do.
    const out = execFileSync(process.execPath, ['scripts/build-if-stale.mjs'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(out).toBe('');
  });
});
