// The scale part of `npm run bench` (issue: OpenZiti's own models, bursts): burst rows and model rows for
// SQLite and, when a PostgreSQL server is at hand, for PostgreSQL, in the table bench/run.ts prints.
import { measureBursts } from './burst.js';
import { cleanup } from './http.js';
import { pgRows } from './goals.js';
import { measuredModels, measureModels } from './models.js';

const ALL = (process.env.BENCH_MODELS ?? 'small,medium,large').split(',');
/**
 * PostgreSQL's models: in the full run Small and Medium (its Large load takes minutes more; the
 * PostgreSQL goal compares the same calls), all three with BENCH_ONLY=models; BENCH_PG_MODELS chooses.
 */
const pgModels = (full: boolean) => (process.env.BENCH_PG_MODELS ?? (full ? 'small,medium' : ALL.join(','))).split(',');

function comparison(): [string, string, string][] {
  const s = measuredModels.get('sqlite');
  const p = measuredModels.get('postgres');
  return s && p ? pgRows(s, p) : [];
}

export async function scaleRows(pgServer: string | undefined): Promise<[string, string, string][]> {
  const rows: [string, string, string][] = [];
  try {
    for (const db of [undefined, ...(pgServer ? [pgServer] : [])]) {
      rows.push(...(await measureBursts(db)));
      rows.push(...(await measureModels(db, db ? pgModels(true) : ALL)));
    }
    rows.push(...comparison());
  } finally {
    cleanup();
  }
  return rows;
}

/** Only the models (BENCH_ONLY=models). */
export async function modelRows(pgServer: string | undefined): Promise<[string, string, string][]> {
  const rows: [string, string, string][] = [];
  try {
    for (const db of [undefined, ...(pgServer ? [pgServer] : [])]) rows.push(...(await measureModels(db, db ? pgModels(false) : ALL)));
    rows.push(...comparison());
  } finally {
    cleanup();
  }
  return rows;
}
