// How to name this program in a suggested command: `ztc` when that is what the shell finds on PATH,
// else the path it was started by (`bin/ztc` in a clone, `dist/ztc` for the executable), so a
// newcomer can paste what is printed.
import fs from 'node:fs';
import path from 'node:path';

export function commandName(): string {
  const script = process.argv[1];
  if (!script) return 'ztc';
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return undefined;
    }
  };
  const self = real(script);
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const candidate = real(path.join(dir, 'ztc'));
    if (candidate && candidate === self) return 'ztc';
  }
  const relative = path.relative(process.cwd(), script);
  return !relative || relative.startsWith('..') || path.isAbsolute(relative) ? script : relative.includes(path.sep) ? relative : `./${relative}`;
}
