// Posture check types as upstream lists them at /posture-check-types: five built-in rows with the
// operating systems (and the versions) its first migration recorded. MFA checks exist but upstream
// never added an MFA row, so it is not listed here either; posture checks of type MFA are still taken.
import { sql } from 'kysely';
import { Type } from 'typebox';
import type { Db } from '../../store/db.js';
import { fromJson } from '../../store/json.js';
import { baseDetail, baseFilterable, defineResource } from '../resource.js';
import { baseFields } from '../schemas/common.js';

type Os = { type: string; versions: string[] };

// The version lists are upstream's data, kept as it serves them (they are informational: an OS check
// compares the versions its own rule names, not these).
const windows: Os = { type: 'Windows', versions: ['Vista', '7', '8', '10', '2000'] };
const linux: Os = { type: 'Linux', versions: ['4.14', '4.19', '5.4', '5.9'] };
const iOS: Os = { type: 'iOS', versions: ['11', '12'] };
const macOS: Os = { type: 'macOS', versions: ['10.15', '11.0'] };
const android: Os = { type: 'Android', versions: ['9', '10', '11'] };
/**
 * Upstream serves the operating systems sorted by type and the versions sorted as strings (its store
 * keeps them as sets): Android, Linux, Windows, iOS, macOS; "10", "2000", "7", "8", "Vista".
 */
const asSets = (list: Os[]): Os[] => [...list].sort((a, b) => (a.type < b.type ? -1 : 1)).map((o) => ({ type: o.type, versions: [...o.versions].sort() }));
/** PROCESS_MULTI came later upstream, with empty version lists. */
const bare = (os: Os): Os => ({ type: os.type, versions: [] });

export const POSTURE_CHECK_TYPES: { id: string; name: string; operatingSystems: Os[] }[] = [
  { id: 'OS', name: 'Operating System Check', operatingSystems: asSets([windows, linux, android, macOS, iOS]) },
  { id: 'PROCESS', name: 'Process Check', operatingSystems: asSets([windows, macOS, linux]) },
  { id: 'DOMAIN', name: 'Windows Domain Check', operatingSystems: asSets([windows]) },
  { id: 'MAC', name: 'MAC Address Check', operatingSystems: asSets([windows, linux, macOS, android]) },
  { id: 'PROCESS_MULTI', name: 'Process Multi Check', operatingSystems: asSets([bare(windows), bare(macOS), bare(linux)]) },
];

/** The built-in types as rows of a derived table, so their list takes filters, sorting and paging like any other. */
const TYPES_EPOCH = '2020-01-01T00:00:00.000Z';
const typeRows = sql.join(
  POSTURE_CHECK_TYPES.map((t) => sql`select ${sql.lit(t.id)} as id, ${sql.lit(t.name)} as name, ${sql.lit(TYPES_EPOCH)} as created_at, ${sql.lit(TYPES_EPOCH)} as updated_at, ${sql.lit('{}')} as tags, ${sql.lit(JSON.stringify(t.operatingSystems))} as operating_systems`),
  sql` union all `,
);
const typeSource = (db: Db) => db.selectFrom(sql`(${typeRows})`.as('e') as never) as never;

export const postureCheckTypes = defineResource({
  name: 'posture check type',
  plural: 'posture-check-types',
  table: 'postureChecks',
  apis: ['management'],
  ops: ['list', 'get'],
  description: 'Posture check types: what a posture check can ask of a client (OS, process, domain, MAC)',
  schemas: { detail: Type.Object({ ...baseFields, name: Type.String(), operatingSystems: Type.Array(Type.Object({ type: Type.String(), versions: Type.Array(Type.String()) })), version: Type.String() }) },
  filterable: { ...baseFilterable, name: { column: 'e.name', type: 'string', sortable: true } },
  source: typeSource,
  detailQuery: (db) => (typeSource(db) as unknown as { selectAll(): never }).selectAll(),
  toDetail: (r) => Object.assign(baseDetail('posture-check-types', r), { name: r.name, operatingSystems: fromJson(r.operatingSystems, []), version: '1' }),
  cli: { columns: ['id', 'name'] },
});
