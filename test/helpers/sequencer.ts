// The order test files start in. vitest starts the files that took longest last time first, but on a
// fresh clone it has no timings and goes by file size: schemathesis (short file, over a minute of
// runs) then started among the last and ran alone at the end. The files known to take longest start
// first; the rest in vitest's own order.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Measured on the 2-core machine, longest first (each 35 s or more with six files at a time). */
const LONGEST = ['test/cli/cli.test.ts', 'test/api/import-batched.test.ts', 'test/api/schemathesis.test.ts', 'test/cli/first-hour.test.ts', 'test/api/crash-durability.test.ts', 'test/docs/readme.test.ts'];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONGEST.findIndex((name) => f.moduleId.endsWith(name));
      return i < 0 ? LONGEST.length : i;
    };
    // Array.prototype.sort is stable: vitest's order holds among the rest.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
