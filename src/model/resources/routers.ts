// Routers. Edge routers (clients connect through them; they carry role attributes for policies) and
// transit routers share one table: /routers and /transit-routers list both kinds, /edge-routers the
// edge ones. Each router is created with an enrollment (method erott) that issues its certificates.
import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import type { Db, Tx } from '../../store/db.js';
import { bit, fromJson, isSet, sortedStrings } from '../../store/json.js';
import { iso } from '../clock.js';
import { invalidField } from '../errors.js';
import { routerCapabilityNames } from '../router-capabilities.js';
import type { Ctx } from '../context.js';
import { hashSecret, newId } from '../ids.js';
import { recordRowChange } from '../events/record.js';
import { signEnrollmentJwt, tokenOf } from '../pki/jwt.js';
import { removeRouterIdentity, syncRouterIdentity } from './router-identities.js';
import { aliases, baseDetail, baseFilterable, defineResource, type FieldSpec, type Row, type WriteMode } from '../resource.js';
import { AnyMap, Attributes, baseFields, Cost, MapOf, Name, Nullable, Tags } from '../schemas/common.js';

/**
 * A router enrollment: a one-time token, as a JWT whose subject is the router; erott for an edge router,
 * trott for a transit router, as upstream names them (`ziti router enroll` asks the method the JWT names).
 */
export async function insertRouterEnrollment(tx: Tx, ctx: Ctx, routerId: string) {
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + ctx.config.enrollmentTtlMinutes * 60_000);
  const token = randomUUID();
  const router = await tx.selectFrom('routers').select('isEdge').where('id', '=', routerId).executeTakeFirst();
  const method = router && !Number(router.isEdge) ? 'trott' : 'erott';
  const jwt = await signEnrollmentJwt(ctx, { subject: routerId, token, method, expiresAt });
  const row = { id: newId(), createdAt: iso(now), updatedAt: iso(now), tags: '{}', identityId: null, routerId, method, tokenHash: hashSecret(token), jwt: ctx.sealer.seal(jwt), expiresAt: expiresAt.toISOString(), caId: null, username: null };
  await tx.insertInto('enrollments').values(row).execute();
  await recordRowChange(tx, ctx, 'enrollments', 'created', row.id, null, row);
}

/** 2.x: the control-channel listeners a controller may dial the router at (address -> groups); stored, not dialled. */
const CtrlChanListeners = MapOf(Type.Array(Type.String({ maxLength: 255 }), { maxItems: 16 }), { maxProperties: 32, description: 'Addresses a controller may dial the router\'s control channel at, each with its groups (upstream 2.0); stored and shown, ztc does not dial routers' });
/** 2.1: configs aimed at the router (by id); stored and shown, not sent to routers. */
const RouterConfigs = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 100, description: 'Ids of configs for the router (upstream 2.1); stored and shown, not sent to routers' });

const common = {
  cost: Type.Optional(Nullable(Cost)),
  disabled: Type.Optional(Nullable(Type.Boolean())),
  noTraversal: Type.Optional(Nullable(Type.Boolean())),
  ctrlChanListeners: Type.Optional(Nullable(CtrlChanListeners)),
  configs: Type.Optional(Nullable(RouterConfigs)),
  tags: Type.Optional(Tags),
};
const edgeOnly = {
  appData: Type.Optional(AnyMap),
  isTunnelerEnabled: Type.Optional(Type.Boolean()),
  roleAttributes: Type.Optional(Attributes),
};

const Stamps = {
  isOnline: Type.Boolean(),
  isVerified: Type.Boolean(),
  // null before enrollment, as upstream's router detail (a pointer there); edge routers differ, below.
  fingerprint: Nullable(Type.String()),
  enrollmentCreatedAt: Nullable(Type.String()),
  enrollmentExpiresAt: Nullable(Type.String()),
  enrollmentJwt: Nullable(Type.String()),
  enrollmentToken: Nullable(Type.String()),
  unverifiedCertPem: Nullable(Type.String()),
  unverifiedFingerprint: Nullable(Type.String()),
};

/** 2.x fields every router view of the management API has. */
const Router2x = {
  ctrlChanListeners: MapOf(Type.Array(Type.String())),
  configs: Type.Array(Type.String()),
  interfaces: Type.Array(Type.Object({}, { additionalProperties: true })),
};

const routerDetail = Type.Object({ ...baseFields, name: Type.String(), cost: Type.Integer(), disabled: Type.Boolean(), noTraversal: Type.Boolean(), ...Stamps, ...Router2x });
const edgeRouterDetail = Type.Object({
  ...baseFields,
  name: Type.String(),
  cost: Type.Integer(),
  disabled: Type.Boolean(),
  noTraversal: Type.Boolean(),
  ...Stamps,
  // Upstream's edge router detail leaves the fingerprint out until the router enrolls (omitempty).
  fingerprint: Type.Optional(Type.String()),
  appData: AnyMap,
  hostname: Type.String(),
  supportedProtocols: MapOf(Type.String()),
  syncStatus: Type.String(),
  roleAttributes: Type.Array(Type.String()),
  isTunnelerEnabled: Type.Boolean(),
  certPem: Nullable(Type.String()),
  versionInfo: Type.Object({ os: Type.String(), arch: Type.String(), version: Type.String(), revision: Type.String(), buildDate: Type.String() }),
  os: Type.String(),
  arch: Type.String(),
  version: Type.String(),
  revision: Type.String(),
  buildDate: Type.String(),
  capabilities: Type.Array(Type.String()),
  capabilitiesMask: Type.Integer(),
  ...Router2x,
});

/** The fields of the client views of an edge router (no enrollment or certificate details). */
export const edgeRouterClientFields = {
  appData: AnyMap,
  cost: Type.Integer(),
  disabled: Type.Boolean(),
  hostname: Type.String(),
  isOnline: Type.Boolean(),
  name: Type.String(),
  noTraversal: Type.Boolean(),
  supportedProtocols: MapOf(Type.String()),
  syncStatus: Type.String(),
  // 2.x (commonEdgeRouterProperties): what the router announced it can do, and its version.
  capabilities: Type.Array(Type.String()),
  version: Type.String(),
};

/**
 * A router as clients see it. Its host name, listener addresses and sync status are those of a connected
 * router: an offline one has none (upstream reads them from the live connection), so SDKs that are
 * offered it do not dial an address nobody answers (a Go SDK redialed a stopped router every second).
 */
export const edgeRouterClientView = (r: Row) => {
  const online = isOnline(r);
  return {
    appData: fromJson(r.appData, {}),
    cost: Number(r.cost),
    disabled: isSet(r.disabled),
    hostname: online ? (r.hostname ?? '') : '',
    isOnline: online,
    name: r.name,
    noTraversal: isSet(r.noTraversal),
    supportedProtocols: online ? fromJson(r.supportedProtocols, {}) : {},
    syncStatus: online ? 'SYNC_DONE' : 'SYNC_UNKNOWN',
    capabilities: routerCapabilityNames(r.capabilitiesMask),
    version: versionOf(r).version,
  };
};

/** The management views' 2.x fields: what an admin gave (ctrlChanListeners, configs); interfaces are never reported here. */
const router2x = (r: Row) => ({ ctrlChanListeners: fromJson(r.ctrlChanListeners, {}), configs: fromJson<string[]>(r.configs, []), interfaces: [] });

/** The capability mask as a JSON number (int64 upstream; a JS client reads above 2^53 rounded either way). */
const capabilitiesMaskOf = (r: Row) => {
  try {
    return r.capabilitiesMask ? Number(BigInt(r.capabilitiesMask)) : 0;
  } catch {
    return 0;
  }
};

/**
 * What the router's control-channel hello said of its build (Version|Revision|BuildDate|OS|Arch), kept
 * from its last connection; blank for a router that never connected.
 */
function versionOf(r: Row) {
  const [version = '', revision = '', buildDate = '', os = '', arch = ''] = String(r.versionInfo ?? '').split('|');
  const info = { os, arch, version, revision, buildDate };
  return { versionInfo: info, ...info };
}

/** Online while the controller running the router keeps its lease in the future (fabric/ refreshes it). */
export const isOnline = (r: Row) => !!r.onlineUntil && Date.parse(r.onlineUntil) > Date.now();

function routerStamps(r: Row, ctx: Ctx) {
  const jwt = r.enrollmentJwt ? ctx.sealer.open(r.enrollmentJwt) : null;
  return {
    isOnline: isOnline(r),
    isVerified: isSet(r.isVerified),
    fingerprint: r.fingerprint || null,
    enrollmentCreatedAt: r.enrollmentCreatedAt ?? null,
    enrollmentExpiresAt: r.enrollmentExpiresAt ?? null,
    enrollmentJwt: jwt,
    enrollmentToken: jwt ? tokenOf(jwt) : null,
    unverifiedCertPem: null,
    unverifiedFingerprint: null,
  };
}

const detailQuery = (edgeOnlyRows: boolean) => (db: Db) => {
  let q = db
    .selectFrom('routers as e')
    .leftJoin('enrollments as en', 'en.routerId', 'e.id')
    .selectAll('e')
    .select(['en.jwt as enrollmentJwt', 'en.createdAt as enrollmentCreatedAt', 'en.expiresAt as enrollmentExpiresAt']);
  if (edgeOnlyRows) q = q.where('e.isEdge', '=', 1);
  return q as never;
};

const routerFilterable: Record<string, FieldSpec> = {
  ...baseFilterable,
  name: { column: 'e.name', type: 'string', sortable: true },
  cost: { column: 'e.cost', type: 'number', sortable: true },
  disabled: { column: 'e.disabled', type: 'boolean', sortable: true },
  noTraversal: { column: 'e.no_traversal', type: 'boolean', sortable: true },
  fingerprint: { column: 'e.fingerprint', type: 'string', sortable: true },
};

async function routerRow(tx: Tx, input: Row, mode: WriteMode, edge: boolean): Promise<Row> {
  const out: Row = {};
  if (mode !== 'patch' || 'ctrlChanListeners' in input) out.ctrlChanListeners = JSON.stringify(input.ctrlChanListeners ?? {});
  if (mode !== 'patch' || 'configs' in input) {
    const ids = [...new Set((input.configs as string[] | null) ?? [])];
    if (ids.length) {
      const found = new Set((await tx.selectFrom('configs').select('id').where('id', 'in', ids).execute()).map((c) => c.id));
      const missing = ids.find((id) => !found.has(id));
      if (missing) throw invalidField('configs', `no config has the id '${missing}'`, missing);
    }
    out.configs = JSON.stringify(ids);
  }
  if (mode !== 'patch' || 'name' in input) out.name = input.name;
  if (mode !== 'patch' || 'cost' in input) out.cost = input.cost ?? 0;
  if (mode !== 'patch' || 'disabled' in input) out.disabled = bit(input.disabled ?? false);
  if (mode !== 'patch' || 'noTraversal' in input) out.noTraversal = bit(input.noTraversal ?? false);
  if (edge) {
    if (mode === 'create') out.isEdge = 1;
    if (mode !== 'patch' || 'appData' in input) out.appData = JSON.stringify(input.appData ?? {});
    if (mode !== 'patch' || 'isTunnelerEnabled' in input) out.isTunnelerEnabled = bit(input.isTunnelerEnabled ?? false);
    if (mode !== 'patch' || 'roleAttributes' in input) out.roleAttributes = JSON.stringify([...new Set(input.roleAttributes ?? [])]);
  }
  return out;
}

const afterCreate = async (tx: Tx, id: string, _input: Row, ctx: Ctx) => {
  await insertRouterEnrollment(tx, ctx, id);
};

/** A tunneler-enabled edge router's Router identity and system policy follow every write (router-identities.ts). */
const routerIdentityHooks = {
  afterWrite: async (tx: Tx, id: string, ctx: Ctx) => syncRouterIdentity(tx, ctx, id),
  beforeDelete: async (tx: Tx, existing: Row, ctx: Ctx) => removeRouterIdentity(tx, ctx, existing.id as string),
};

/** An edge router's links beyond self, as upstream gives them wherever it shows one (the current identity's list too). */
export const edgeRouterLinks = (id: string) => ({
  'edge-router-policies': { href: `./edge-routers/${id}/edge-router-policies` },
  'service-edge-router-policies': { href: `./edge-routers/${id}/service-edge-router-policies` },
});

export const edgeRouters = defineResource({
  name: 'edge router',
  plural: 'edge-routers',
  table: 'routers',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Edge routers: where clients connect to the network; enrolled with a one-time token',
  schemas: {
    detail: edgeRouterDetail,
    create: Type.Object({ name: Name, ...common, ...edgeOnly }, { additionalProperties: false }),
    update: Type.Object({ name: Name, ...common, ...edgeOnly }, { additionalProperties: false }),
    patch: Type.Object({ name: Type.Optional(Name), ...common, ...edgeOnly }, { additionalProperties: false }),
  },
  roleAttributes: 'roleAttributes',
  policySide: 'edge-router',
  filterable: {
    ...routerFilterable,
    isVerified: { column: 'e.is_verified', type: 'boolean', sortable: true },
    isTunnelerEnabled: { column: 'e.is_tunneler_enabled', type: 'boolean', sortable: true },
    roleAttributes: { column: 'e.role_attributes', type: 'set', indexed: true },
    // A lease that lapsed is cleared by the next sweep of any controller (fabric/routers.ts).
    connected: { column: 'e.online_until', expr: sql`(case when e.online_until is null then 0 else 1 end)`, type: 'boolean', sortable: true },
    online: { column: 'e.online_until', expr: sql`(case when e.online_until is null then 0 else 1 end)`, type: 'boolean', sortable: true },
    ...aliases({ hostname: { column: 'e.hostname', type: 'string', sortable: true } }),
  },
  source: (db) => db.selectFrom('routers as e').where('e.isEdge', '=', 1) as never,
  detailQuery: detailQuery(true),
  toDetail: (r, ctx) => Object.assign(baseDetail('edge-routers', r, edgeRouterLinks(r.id)), {
    ...edgeRouterClientView(r),
    ...routerStamps(r, ctx),
    fingerprint: r.fingerprint || undefined,
    roleAttributes: sortedStrings(r.roleAttributes),
    isTunnelerEnabled: isSet(r.isTunnelerEnabled),
    certPem: r.certPem ?? null,
    ...versionOf(r),
    capabilitiesMask: capabilitiesMaskOf(r),
    ...router2x(r),
  }),
  toRow: async (input, mode, tx) => routerRow(tx, input, mode, true),
  hooks: { afterCreate, ...routerIdentityHooks },
  cli: { columns: ['id', 'name', 'online=isOnline', 'isVerified', 'roleAttributes', 'cost', 'isTunnelerEnabled'] },
});

export const routers = defineResource({
  name: 'router',
  plural: 'routers',
  table: 'routers',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Routers: every router of the network, edge and transit; those created here are transit routers',
  schemas: {
    detail: routerDetail,
    create: Type.Object({ name: Name, ...common }, { additionalProperties: false }),
    update: Type.Object({ name: Name, ...common }, { additionalProperties: false }),
    patch: Type.Object({ name: Type.Optional(Name), ...common }, { additionalProperties: false }),
  },
  // ZAC's transit router form is its edge router form: it sends the edge-only fields too.
  ignored: { roleAttributes: Attributes, appData: Type.Record(Type.String(), Type.Unknown()), isTunnelerEnabled: Type.Boolean() },
  filterable: { ...routerFilterable, ...aliases({ isEdge: { column: 'e.is_edge', type: 'boolean', sortable: true }, isVerified: { column: 'e.is_verified', type: 'boolean', sortable: true } }) },
  detailQuery: detailQuery(false),
  // Linked at ./transit-routers/ from both paths, as upstream 1.1.10 answers.
  toDetail: (r, ctx) => Object.assign(baseDetail('transit-routers', r), { name: r.name, cost: Number(r.cost), disabled: isSet(r.disabled), noTraversal: isSet(r.noTraversal), ...routerStamps(r, ctx), ...router2x(r) }),
  toRow: async (input, mode, tx) => routerRow(tx, input, mode, false),
  // An edge router deleted through /routers takes its Router identity along too.
  hooks: { afterCreate, beforeDelete: routerIdentityHooks.beforeDelete },
  cli: { columns: ['id', 'name', 'isVerified', 'cost', 'disabled'] },
});

/** The same resource at upstream's other path. */
export const transitRouters = defineResource({ ...routers, name: 'transit router', plural: 'transit-routers' });
