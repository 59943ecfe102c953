// Services: what identities dial and bind. Their configs (one per config type) are kept in
// service_configs; the client view adds the caller's permissions, merged configs and posture queries.
import { Type } from 'typebox';
import { serviceLinks } from './service-links.js';
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { Db, Tx } from '../../store/db.js';
import type { DialectHelpers } from '../../store/dialect.js';
import { sessionColumns, takeSession, type SessionWithIdentity } from '../auth/api-sessions.js';
import { bit, fromJson, isSet, sortedStrings } from '../../store/json.js';
import { byIdOrName } from '../../store/by-id-or-name.js';
import { all, first, precompile } from '../../store/precompiled.js';
import { invalidField } from '../errors.js';
import { grantsFromIdentity, grantsOf, SERVICE_POLICY_KINDS, type Grant } from '../policy/access.js';
import { byPolicy, CHECK_FIELDS, identityChecks, postureQueries, RESPONSE_FIELDS, responsesFrom, responsesOf, responsesQuery, type Check, type Responses } from '../posture/evaluate.js';
import { aliases, baseDetail, baseFilterable, defineResource, type ResourceDecl, type Row, type WriteMode } from '../resource.js';
import { Attributes, baseFields, MapOf, Name, Tags } from '../schemas/common.js';

const ConfigRefs = Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string', minLength: 1, maxLength: 255 }, maxItems: 100, description: 'Config ids or names, at most one per config type' });
const MaxIdle = Type.Integer({ minimum: 0, maximum: 2 ** 53 - 1 });
const Strategy = Type.String({ maxLength: 255, description: 'How traffic picks a terminator; empty means smartrouting' });

const writable = {
  configs: Type.Optional(ConfigRefs),
  maxIdleTimeMillis: Type.Optional(MaxIdle),
  roleAttributes: Type.Optional(Attributes),
  tags: Type.Optional(Tags),
  terminatorStrategy: Type.Optional(Strategy),
};
export const serviceCreate = Type.Object({ name: Name, encryptionRequired: Type.Boolean(), ...writable }, { additionalProperties: false });
export const serviceUpdate = Type.Object({ name: Name, encryptionRequired: Type.Optional(Type.Boolean()), ...writable }, { additionalProperties: false });
export const servicePatch = Type.Object({ name: Type.Optional(Name), encryptionRequired: Type.Optional(Type.Boolean()), ...writable }, { additionalProperties: false });

const PostureQueries = Type.Object({
  policyId: Type.String(),
  policyType: Type.String(),
  isPassing: Type.Boolean(),
  postureQueries: Type.Array(Type.Object({ id: Type.String(), queryType: Type.String(), isPassing: Type.Boolean(), timeout: Type.Integer(), timeoutRemaining: Type.Integer() }, { additionalProperties: true })),
});
export const serviceDetail = Type.Object({
  ...baseFields,
  name: Type.String(),
  encryptionRequired: Type.Boolean(),
  maxIdleTimeMillis: Type.Integer(),
  terminatorStrategy: Type.String(),
  roleAttributes: Type.Array(Type.String()),
  configs: Type.Array(Type.String()),
  config: MapOf(MapOf(Type.Unknown())),
  permissions: Type.Array(Type.String()),
  postureQueries: Type.Array(PostureQueries),
});

/** Config ids for a list of ids or names; two configs of one type are refused. */
async function resolveConfigs(tx: Tx, refs: string[]): Promise<{ configId: string; configTypeId: string }[]> {
  const out: { configId: string; configTypeId: string }[] = [];
  for (const ref of [...new Set(refs)]) {
    const c = await byIdOrName<{ id: string; configTypeId: string }>(tx, 'configs', ref, ['id', 'configTypeId']);
    if (!c) throw invalidField('configs', `no config has the id or name '${ref}'`, ref);
    const clash = out.find((o) => o.configTypeId === c.configTypeId);
    if (clash && clash.configId !== c.id) throw invalidField('configs', `configs '${clash.configId}' and '${c.id}' are of the same type: a service takes one config per type`, ref);
    if (!clash) out.push({ configId: c.id, configTypeId: c.configTypeId });
  }
  return out;
}

/** Who reads a service: its permissions and posture queries are the caller's, config follows configTypes. */
export interface ServiceViewer {
  identityId: string;
  isAdmin: boolean;
  /** Config type ids or names (or "all") whose configs go into `config`. */
  configTypes: string[];
  /** The API session whose posture responses answer the posture queries. */
  apiSessionId?: string;
}

interface ConfigRow {
  serviceId: string;
  configId: string;
  configTypeId: string;
  typeName: string;
  data: string;
}

const attachedBase = (db: Db) =>
  db
    .selectFrom('serviceConfigs as sc')
    .innerJoin('configs as c', 'c.id', 'sc.configId')
    .innerJoin('configTypes as t', 't.id', 'sc.configTypeId')
    .select(['sc.serviceId', 'sc.configId', 'sc.configTypeId', 't.name as typeName', 'c.data']);
const overriddenBase = (db: Db, identityId: unknown) =>
  db
    .selectFrom('identityServiceConfigs as o')
    .innerJoin('configs as c', 'c.id', 'o.configId')
    .innerJoin('configTypes as t', 't.id', 'o.configTypeId')
    .select(['o.serviceId', 'o.configId', 'o.configTypeId', 't.name as typeName', 'c.data'])
    .where('o.identityId', '=', identityId as string);
const CONFIG_FIELDS = ['serviceId', 'configId', 'configTypeId', 'typeName', 'data'] as const;

/** What a caller's view of services reads beside the services: their configs, its overrides, grants and posture checks. */
interface ViewerReads {
  attached: ConfigRow[];
  overrides: ConfigRow[];
  grants: Grant[];
  checks: Map<string, Check[]>;
  /** The API session's posture responses, when read with the rest. */
  responses?: Responses;
}

type Among = (ref: Expression<unknown> | RawBuilder<unknown>) => RawBuilder<SqlBool>;

// A caller's reads as JSON arrays, one column each, for the services `among` selects: sent as four
// statements at once they did not overlap on two cores (the client, the controller and PostgreSQL's
// backends share them); as one statement, one service by name p50 0.8 -> 0.7 ms on PostgreSQL.
const viewerColumns = (db: Db, d: DialectHelpers, among: Among, identityId: unknown, kinds: Among, grants: Expression<unknown> = grantsOf(db, among, identityId)) => [
  d.jsonRows(attachedBase(db).where((eb) => among(eb.ref('sc.serviceId'))), CONFIG_FIELDS).as('attached'),
  d.jsonRows(overriddenBase(db, identityId).where((eb) => among(eb.ref('o.serviceId'))), CONFIG_FIELDS).as('overrides'),
  d.jsonRows(grants, ['serviceId', 'policyId', 'kind']).as('grants'),
  d.jsonRows(identityChecks(db, identityId, kinds), CHECK_FIELDS).as('checks'),
];
// PostgreSQL answers a json column parsed, SQLite as text.
const parsed = <T>(v: unknown): T[] => (typeof v === 'string' ? JSON.parse(v) : v) as T[];
const readsOf = (r: Record<string, unknown> | undefined): ViewerReads => ({
  attached: parsed<ConfigRow>(r?.attached ?? '[]'),
  overrides: parsed<ConfigRow>(r?.overrides ?? '[]'),
  grants: parsed<Grant>(r?.grants ?? '[]'),
  // The checks of every policy that grants the viewer anything (those of this page's grants among
  // them), by name (a JSON array need not keep its subquery's order).
  checks: byPolicy(parsed<Check>(r?.checks ?? '[]').sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))),
});

// Compiled once, the page's ids one array parameter (store/precompiled.ts): the services' configs (all
// a page needs without a caller's view), or a caller's reads in one statement.
const attachedConfigs = precompile<ConfigRow>((db, p) => attachedBase(db).where((eb) => p.anyOf(eb.ref('sc.serviceId'), 0)) as never);
const viewerExtras = precompile<Record<string, unknown>>((db, p, d) =>
  db.selectNoFrom(viewerColumns(db, d, (ref) => p.anyOf(ref, 0), p(1), (k) => p.anyOf(k, 2))) as never,
);
// The same for a page of many services, its grants read from the caller's side (grantsFromIdentity).
const viewerExtrasWide = precompile<Record<string, unknown>>((db, p, d) =>
  db.selectNoFrom(viewerColumns(db, d, (ref) => p.anyOf(ref, 0), p(1), (k) => p.anyOf(k, 2), grantsFromIdentity(db, (ref) => p.inSet(ref, 0), p(1)))) as never,
);
/**
 * From this many services a page's grants are read from the caller's side. For the bench's probe
 * identity (in every policy) the two forms cost the same at about 25-50 services on Medium (50 policies)
 * and about 100 on Large (250 policies), on both databases; a caller in few policies pays little either way.
 */
export const WIDE_PAGE = 100;

/**
 * A client's one service by name: its API session (with its identity), the service by that name
 * whether or not the client may see it, and the client's reads for it, in one statement (on
 * PostgreSQL one wait instead of three: the session, the page, its reads). Undefined when no session
 * has this token hash. Whether the service is the client's to see is the caller's to decide: granted
 * (`reads.grants`) or an admin's.
 */
const serviceByName = precompile<Record<string, unknown>>((db, p, d) =>
  db
    .selectFrom('apiSessions as sess')
    .innerJoin('identities as i', 'i.id', 'sess.identityId')
    .leftJoin('services as e', (j) => j.on('e.name', '=', p(1)))
    .selectAll('e')
    .select(sessionColumns('sess', 'i') as never)
    .select(viewerColumns(db, d, (ref) => sql<SqlBool>`${ref} = ${sql.ref('e.id')}`, sql.ref('sess.identityId'), (k) => p.anyOf(k, 2)))
    // Its posture responses too: a check applies to most calls of a network that has any.
    .select(d.jsonRows(responsesQuery(db, sql.ref('sess.id')), RESPONSE_FIELDS).as('responses'))
    .where('sess.tokenHash', '=', p(0)) as never,
);

export interface ServiceWithSession {
  session: SessionWithIdentity;
  rest: { row?: Row; reads: ViewerReads };
}

export async function serviceByNameWithSession(db: Db, tokenHash: string, name: string): Promise<ServiceWithSession | undefined> {
  const r = await first(db, serviceByName, [tokenHash, name, SERVICE_POLICY_KINDS]);
  if (!r) return undefined;
  const session = takeSession(r);
  const reads = { ...readsOf(r), responses: responsesFrom(parsed(r.responses)) };
  for (const c of ['attached', 'overrides', 'grants', 'checks', 'responses']) delete r[c];
  return { session, rest: { row: r.id == null ? undefined : r, reads } };
}

/** Configs, merged config data, permissions and posture queries of a page of services, in a few queries. */
export async function expandServices(db: Db, rows: Row[], now: Date, viewer?: ServiceViewer, read?: ViewerReads) {
  const ids = rows.map((r) => r.id as string);
  if (!ids.length) return;
  const { attached, overrides, grants, checks, responses: readResponses } =
    read ?? (viewer ? readsOf(await first(db, ids.length >= WIDE_PAGE ? viewerExtrasWide : viewerExtras, [ids, viewer.identityId, SERVICE_POLICY_KINDS])) : { ...readsOf(undefined), attached: await all<ConfigRow>(db, attachedConfigs, [ids]) });
  // Responses matter only to checks: none in most networks, so no query for them.
  const responses = readResponses ?? (viewer?.apiSessionId && checks.size ? await responsesOf(db, viewer.apiSessionId) : new Map());
  // The config types asked for, by id or by name (or "all"); none without a viewer.
  const types = new Set(viewer?.configTypes ?? []);
  const wanted = (a: ConfigRow) => types.has('all') || types.has(a.configTypeId) || types.has(a.typeName);
  const byService = <T extends { serviceId: string }>(list: T[]) => {
    const m = new Map<string, T[]>();
    for (const x of list) {
      const those = m.get(x.serviceId);
      if (those) those.push(x);
      else m.set(x.serviceId, [x]);
    }
    return (id: unknown) => m.get(id as string) ?? [];
  };
  const [attachedTo, overridesOf, grantedTo] = [byService(attached), byService(overrides), byService(grants)];
  for (const r of rows) {
    const own = attachedTo(r.id);
    // By id, as upstream lists a service's configs (its store keeps them as keys of a bucket).
    r.configIds = own.map((a) => a.configId).sort();
    const config: Record<string, unknown> = {};
    for (const a of [...own, ...overridesOf(r.id)]) {
      if (wanted(a)) config[a.typeName] = fromJson(a.data, {});
    }
    r.config = config;
    const mine = grantedTo(r.id);
    const perms = new Set(mine.map((g) => (g.kind === 'dial' ? 'Dial' : 'Bind')));
    if (viewer?.isAdmin) perms.add('Dial').add('Bind');
    r.permissions = [...perms].sort();
    r.postureQueries = postureQueries(mine, checks, responses, now);
  }
}

export const services = defineResource({
  name: 'service',
  plural: 'services',
  table: 'services',
  apis: ['management', 'client'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Services: what identities dial (connect to) and bind (host), with their configs',
  schemas: { detail: serviceDetail, create: serviceCreate, update: serviceUpdate, patch: servicePatch },
  blankAsNull: ['terminatorStrategy'],
  roleAttributes: 'roleAttributes',
  policySide: 'service',
  touchesServices: true,
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true, unique: true },
    terminatorStrategy: { column: 'e.terminator_strategy', type: 'string', sortable: true },
    roleAttributes: { column: 'e.role_attributes', type: 'set', indexed: true },
    configs: { column: 'e.id', type: 'set', members: { table: 'service_configs', owner: 'service_id', value: 'config_id' } },
    ...aliases({
      encryptionRequired: { column: 'e.encryption_required', type: 'boolean', sortable: true },
      maxIdleTimeMillis: { column: 'e.max_idle_time_millis', type: 'number', sortable: true },
    }),
  },
  expand: (db, rows, ctx) => expandServices(db, rows, ctx.clock.now()),
  toDetail: (r) => Object.assign(baseDetail('services', r, serviceLinks(r.id)), {
    name: r.name,
    encryptionRequired: isSet(r.encryptionRequired),
    maxIdleTimeMillis: Number(r.maxIdleTimeMillis),
    terminatorStrategy: r.terminatorStrategy,
    roleAttributes: sortedStrings(r.roleAttributes),
    configs: r.configIds ?? [],
    config: r.config ?? {},
    permissions: r.permissions ?? [],
    postureQueries: r.postureQueries ?? [],
  }),
  toRow: async (input: Row, mode: WriteMode, _tx: Tx, _ctx, existing?: Row) => {
    const out: Row = {};
    if (mode !== 'patch' || 'name' in input) out.name = input.name;
    if (mode === 'create') out.encryptionRequired = bit(input.encryptionRequired);
    else if ('encryptionRequired' in input && existing && input.encryptionRequired !== isSet(existing.encryptionRequired)) {
      throw invalidField('encryptionRequired', 'is set when the service is created and cannot change: create a new service instead', input.encryptionRequired);
    }
    if (mode !== 'patch' || 'maxIdleTimeMillis' in input) out.maxIdleTimeMillis = input.maxIdleTimeMillis ?? 0;
    if (mode !== 'patch' || 'terminatorStrategy' in input) out.terminatorStrategy = input.terminatorStrategy ?? 'smartrouting';
    if (mode !== 'patch' || 'roleAttributes' in input) out.roleAttributes = JSON.stringify([...new Set(input.roleAttributes ?? [])]);
    return out;
  },
  hooks: {
    afterWrite: async (tx, id, _ctx, input, mode) => {
      if (mode === 'patch' && !('configs' in input)) return;
      const wanted = await resolveConfigs(tx, input.configs ?? []);
      await tx.deleteFrom('serviceConfigs').where('serviceId', '=', id).execute();
      if (wanted.length) await tx.insertInto('serviceConfigs').values(wanted.map((w) => ({ serviceId: id, ...w }))).execute();
    },
  },
  cli: { columns: ['id', 'name', 'encryptionRequired', 'roleAttributes', 'intercepts=configs@configs/data.addresses', 'configs@configs'] },
});

/** The services declaration as one caller sees it. */
export const serviceViewFor = (viewer: ServiceViewer): ResourceDecl => ({ ...services, expand: (db, rows, ctx) => expandServices(db, rows, ctx.clock.now(), viewer) });
