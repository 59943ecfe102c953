// The scale part of `npm run bench` (issue: OpenZiti's own models, bursts): burst rows and model rows for
// SQLite and, when a PostgreSQL server is at hand, for PostgreSQL, in the table bench/run.ts prints.
import { measureBursts } from './burst.js';
import { cleanup } from './http.js';
import { measureModels } from './models.js';

export async function scaleRows(pgServer: string | undefined): Promise<[string, string, string][]> {
  const rows: [string, string, string][] = [];
  try {
    for (const db of [undefined, ...(pgServer ? [pgServer] : [])]) {
      rows.push(...(await measureBursts(db)));
      rows.push(...(await measureModels(db)));
    }
  } finally {
    cleanup();
  }
  return rows;
}
