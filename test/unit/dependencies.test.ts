// Every runtime dependency is one the program imports (ink and React stayed long after their last
// use), and `npm install` on Node 20 has nothing to warn about: no engine above 20 in the tree, and
// every package with an install script is decided in allowScripts.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string>; allowScripts: Record<string, boolean> };
const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { engines?: { node?: string }; hasInstallScript?: boolean; dev?: boolean }> };

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : /\.(ts|mjs)$/.test(e.name) ? [path.join(dir, e.name)] : []));
}

describe('dependencies', () => {
  it('are all imported by the program', () => {
    const text = [...sources('src'), ...sources('scripts')].map((f) => fs.readFileSync(f, 'utf8')).join('\n');
    const unused = Object.keys(pkg.dependencies).filter((d) => !new RegExp(`(from |import\\(|require\\(|resolve\\()'${d.replace(/[/.]/g, '\\$&')}(/[^']*)?'`).test(text));
    expect(unused).toEqual([]);
  });

  it('all run on Node 20 and have their install scripts decided', () => {
    // A range admits Node 20 when one of its alternatives does not start above major 20.
    const admits20 = (range: string) => range.split('||').some((alt) => Number(/(?:>=?|\^|~|^)\s*v?(\d+)/.exec(alt.trim())?.[1] ?? 0) <= 20);
    const above20 = Object.entries(lock.packages).filter(([, p]) => p.engines?.node && !admits20(p.engines.node)).map(([name]) => name);
    expect(above20).toEqual([]);
    const undecided = Object.entries(lock.packages)
      .filter(([name, p]) => name && p.hasInstallScript)
      .map(([name]) => name.replace(/^.*node_modules\//, ''))
      .filter((name) => !(name in pkg.allowScripts));
    expect(undecided).toEqual([]);
  });
});
