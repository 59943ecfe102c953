import { Type } from 'typebox';
import { sql } from 'kysely';
import type { Tx } from '../../store/db.js';
import { first, precompile } from '../../store/precompiled.js';
import { listSource } from '../crud.js';
import type { Ctx } from '../context.js';
import { sessionColumns, takeSession, type SessionWithIdentity } from '../auth/api-sessions.js';
import { bit, fromJson, isSet, toJson, sortedStrings } from '../../store/json.js';
import { cannotDelete, invalidField } from '../errors.js';
import { newId } from '../ids.js';
import { tokenOf } from '../pki/jwt.js';
import { insertEnrollment } from './enrollments.js';
import { aliases, baseDetail, baseFilterable, defineResource, entityRef, type AnyQuery, type Row, type WriteMode } from '../resource.js';
import {
  AnyMap, Attributes, baseFields, Cost, EntityRef, MapOf, Name, Nullable, Precedence, Tags,
} from '../schemas/common.js';
import { identityLinks } from './identity-links.js';
import { checkRouterIdentityDelete, checkRouterIdentityRename } from './router-identity-guard.js';
import { IDENTITY_TYPE_INPUTS, storedIdentityType } from './identity-types.js';
import { Permissions } from '../permissions.js';
import { connectionFilterFields, edgeRouterConnection } from '../edge-connections.js';
import { revokeDeletedIdentity } from '../auth/revocations.js';

export const DEFAULT_AUTH_POLICY_ID = 'default';

const IdentityTypeName = Type.Union(IDENTITY_TYPE_INPUTS.map((t) => Type.Literal(t)), { description: 'User, Device and Service are accepted and stored as Default, as upstream 1.x stores them; Router for routers' });
const ClientInfo = Type.Unsafe<Record<string, string>>({ type: 'object', additionalProperties: { type: 'string' } });

const writable = {
  appData: Type.Optional(AnyMap),
  authPolicyId: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  defaultHostingCost: Type.Optional(Cost),
  defaultHostingPrecedence: Type.Optional(Precedence),
  externalId: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  // 2.x's CLI sends `"permissions": null` when none are given (a nil Go slice): no permissions, as upstream.
  permissions: Type.Optional(Nullable(Permissions)),
  roleAttributes: Type.Optional(Attributes),
  serviceHostingCosts: Type.Optional(MapOf(Cost)),
  serviceHostingPrecedences: Type.Optional(MapOf(Precedence)),
  tags: Type.Optional(Tags),
};

const Enrollment = Type.Object(
  {
    ott: Type.Optional(Type.Boolean()),
    ottca: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    // A plain string in the document, and upstream takes any (`ziti edge create identity bob --updb bob`
    // is a 201 there); capped where authenticators are (docs/compatibility.md: login takes 4 to 100).
    updb: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  },
  { additionalProperties: false },
);

export const identityCreate = Type.Object(
  { name: Name, type: IdentityTypeName, isAdmin: Type.Boolean(), enrollment: Type.Optional(Enrollment), ...writable },
  { additionalProperties: false },
);
export const identityUpdate = Type.Object({ name: Name, type: IdentityTypeName, isAdmin: Type.Boolean(), ...writable }, { additionalProperties: false });
export const identityPatch = Type.Object(
  { name: Type.Optional(Name), type: Type.Optional(IdentityTypeName), isAdmin: Type.Optional(Type.Boolean()), ...writable },
  { additionalProperties: false },
);

const Stamped = (extra: Record<string, ReturnType<typeof Type.String> | typeof EntityRef> = {}) =>
  Type.Object({ id: Type.String(), expiresAt: Type.String(), jwt: Type.String(), token: Type.String(), ...extra });

export const identityDetail = Type.Object({
  ...baseFields,
  name: Type.String(),
  type: EntityRef,
  typeId: Type.String(),
  isAdmin: Type.Boolean(),
  isDefaultAdmin: Type.Boolean(),
  isMfaEnabled: Type.Boolean(),
  authPolicy: EntityRef,
  authPolicyId: Type.String(),
  authenticators: Type.Object({
    cert: Type.Optional(Type.Object({ id: Type.String(), fingerprint: Type.String() })),
    updb: Type.Optional(Type.Object({ id: Type.String(), username: Type.String() })),
  }),
  enrollment: Type.Object({ ott: Type.Optional(Stamped()), ottca: Type.Optional(Stamped({ caId: Type.String(), ca: EntityRef })), updb: Type.Optional(Stamped()) }),
  appData: AnyMap,
  defaultHostingCost: Type.Integer(),
  defaultHostingPrecedence: Type.String(),
  serviceHostingCosts: MapOf(Type.Integer()),
  serviceHostingPrecedences: MapOf(Type.String()),
  roleAttributes: Type.Array(Type.String()),
  permissions: Type.Array(Type.String()),
  envInfo: ClientInfo,
  sdkInfo: ClientInfo,
  externalId: Nullable(Type.String()),
  hasApiSession: Type.Boolean(),
  hasEdgeRouterConnection: Type.Boolean(),
  // 2.x: online, offline or unknown (edgeRouterConnection below); its network interfaces (never reported here).
  edgeRouterConnectionStatus: Type.Union([Type.Literal('online'), Type.Literal('offline'), Type.Literal('unknown')]),
  interfaces: Type.Array(Type.Object({}, { additionalProperties: true })),
  disabled: Type.Boolean(),
  // Absent unless the identity is disabled, as upstream (omitempty there).
  disabledAt: Type.Optional(Type.String()),
  disabledUntil: Type.Optional(Type.String()),
});

// Whether the identity is connected to an edge router (hasEdgeRouterConnection and the 2.x status):
// model/edge-connections.ts, from what this controller's data plane reports (its embedded router's SDK
// connections, 2.x routers' ConnectEvents, 1.x routers' API-session heartbeats). Online when connected
// here; otherwise unknown rather than offline (another controller sharing the store may hold it).

async function checkAuthPolicy(tx: Tx, id: string) {
  const found = await tx.selectFrom('authPolicies').select('id').where('id', '=', id).executeTakeFirst();
  if (!found) throw invalidField('authPolicyId', `no auth policy has the id '${id}'`, id);
}

/** Request fields that map one-to-one onto a column, with how to store them. */
const plain: Record<string, (v: Row[string]) => unknown> = {
  name: (v) => v,
  defaultHostingCost: (v) => v ?? 0,
  defaultHostingPrecedence: (v) => v ?? 'default',
  externalId: (v) => v ?? null,
  appData: (v) => toJson(v, {}),
  roleAttributes: (v) => toJson([...new Set(v ?? [])], []),
  permissions: (v) => toJson([...new Set(v ?? [])], []),
  serviceHostingCosts: (v) => toJson(v, {}),
  serviceHostingPrecedences: (v) => toJson(v, {}),
};

async function toRow(input: Row, mode: WriteMode, tx: Tx, ctx: Ctx, existing?: Row): Promise<Row> {
  const out: Row = {};
  checkRouterIdentityRename(existing, input, ctx);
  for (const [field, store] of Object.entries(plain)) {
    if (mode !== 'patch' || field in input) out[field] = store(input[field]);
  }
  if (mode !== 'patch' || 'type' in input) out.typeId = storedIdentityType(input.type as string);
  if (mode !== 'patch' || 'isAdmin' in input) {
    if (existing && isSet(existing.isDefaultAdmin) && input.isAdmin === false) {
      throw invalidField('isAdmin', 'the default admin must stay an admin', false);
    }
    out.isAdmin = bit(input.isAdmin);
  }
  if (mode !== 'patch' || 'authPolicyId' in input) {
    const policy = input.authPolicyId ?? 'default';
    // The default policy is a system one, never deleted: only another is looked up (on PostgreSQL a
    // round trip fewer in every identity create).
    if (policy !== 'default') await checkAuthPolicy(tx, policy);
    out.authPolicyId = policy;
  }
  return out;
}

export const identities = defineResource({
  name: 'identity',
  plural: 'identities',
  table: 'identities',
  apis: ['management'],
  ops: ['list', 'get', 'create', 'update', 'patch', 'delete'],
  description: 'Identities: the users, devices, services and routers that authenticate to the network',
  schemas: { detail: identityDetail, create: identityCreate, update: identityUpdate, patch: identityPatch },
  blankAsNull: ['externalId', 'authPolicyId'],
  roleAttributes: 'roleAttributes',
  policySide: 'identity',
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true },
    type: { column: 'e.type_id', type: 'string', sortable: true },
    isAdmin: { column: 'e.is_admin', type: 'boolean', sortable: true },
    isDefaultAdmin: { column: 'e.is_default_admin', type: 'boolean', sortable: true },
    authPolicyId: { column: 'e.auth_policy_id', type: 'string', sortable: true },
    externalId: { column: 'e.external_id', type: 'string', sortable: true },
    roleAttributes: { column: 'e.role_attributes', type: 'set', indexed: true },
    ...aliases({
      typeId: { column: 'e.type_id', type: 'string', sortable: true },
      disabled: { column: 'e.disabled', type: 'boolean', sortable: true },
      defaultHostingCost: { column: 'e.default_hosting_cost', type: 'number', sortable: true },
      defaultHostingPrecedence: { column: 'e.default_hosting_precedence', type: 'string', sortable: true },
    }),
  },
  // Who is online (ziti#4376): the connection fields, filterable and sortable as the detail shows them.
  filterableNow: connectionFilterFields,
  detailQuery: (db) =>
    db
      .selectFrom('identities as e')
      .innerJoin('identityTypes as t', 't.id', 'e.typeId')
      .innerJoin('authPolicies as p', 'p.id', 'e.authPolicyId')
      // The methods as literals, not parameters: PostgreSQL then plans the prepared statement once
      // (generic plan) instead of again on every call; planning these eleven tables took 2 ms of a
      // page of 25 identities' 2.3 (0.6 ms so).
      .leftJoin('authenticators as au', (j) => j.onRef('au.identityId', '=', 'e.id').on('au.method', '=', sql.lit('updb')))
      .leftJoin('authenticators as ac', (j) => j.onRef('ac.identityId', '=', 'e.id').on('ac.method', '=', sql.lit('cert')))
      .leftJoin('enrollments as eo', (j) => j.onRef('eo.identityId', '=', 'e.id').on('eo.method', '=', sql.lit('ott')))
      .leftJoin('enrollments as eca', (j) => j.onRef('eca.identityId', '=', 'e.id').on('eca.method', '=', sql.lit('ottca')))
      .leftJoin('enrollments as eu', (j) => j.onRef('eu.identityId', '=', 'e.id').on('eu.method', '=', sql.lit('updb')))
      .leftJoin('cas as ecac', 'ecac.id', 'eca.caId')
      .leftJoin('mfa as m', 'm.identityId', 'e.id')
      .selectAll('e')
      .select(['eo.id as ottId', 'eo.jwt as ottJwt', 'eo.expiresAt as ottExpiresAt', 'eca.id as ottcaId', 'eca.jwt as ottcaJwt', 'eca.expiresAt as ottcaExpiresAt', 'eca.caId as ottcaCaId', 'ecac.name as ottcaCaName', 'eu.id as updbEnrollmentId', 'eu.jwt as updbJwt', 'eu.expiresAt as updbExpiresAt', 'm.isVerified as mfaVerified'])
      .select(['t.name as typeName', 'p.name as authPolicyName', 'au.id as updbId', 'au.username as updbUsername', 'ac.id as certId', 'ac.fingerprint as certFingerprint'])
      .select((eb) => eb.exists(eb.selectFrom('apiSessions as s').select('s.id').whereRef('s.identityId', '=', 'e.id')).as('hasApiSession')) as never,
  toDetail: (r, ctx) => Object.assign(baseDetail('identities', r, identityLinks(r.id, r.authPolicyId)), {
    name: r.name,
    type: entityRef('identity-types', r.typeId, r.typeName),
    typeId: r.typeId,
    isAdmin: isSet(r.isAdmin),
    isDefaultAdmin: isSet(r.isDefaultAdmin),
    isMfaEnabled: isSet(r.mfaVerified),
    authPolicy: entityRef('auth-policies', r.authPolicyId, r.authPolicyName),
    authPolicyId: r.authPolicyId,
    authenticators: {
      ...(r.updbId ? { updb: { id: r.updbId, username: r.updbUsername } } : {}),
      ...(r.certId ? { cert: { id: r.certId, fingerprint: r.certFingerprint ?? '' } } : {}),
    },
    enrollment: {
      ...(r.ottId ? { ott: { id: r.ottId, jwt: ctx.sealer.open(r.ottJwt), token: tokenOf(ctx.sealer.open(r.ottJwt)), expiresAt: r.ottExpiresAt } } : {}),
      ...(r.ottcaId ? { ottca: { id: r.ottcaId, jwt: ctx.sealer.open(r.ottcaJwt), token: tokenOf(ctx.sealer.open(r.ottcaJwt)), expiresAt: r.ottcaExpiresAt, caId: r.ottcaCaId, ca: entityRef('cas', r.ottcaCaId, r.ottcaCaName ?? '') } } : {}),
      ...(r.updbEnrollmentId ? { updb: { id: r.updbEnrollmentId, jwt: ctx.sealer.open(r.updbJwt), token: tokenOf(ctx.sealer.open(r.updbJwt)), expiresAt: r.updbExpiresAt } } : {}),
    },
    appData: fromJson(r.appData, {}),
    defaultHostingCost: Number(r.defaultHostingCost),
    defaultHostingPrecedence: r.defaultHostingPrecedence,
    serviceHostingCosts: fromJson(r.serviceHostingCosts, {}),
    serviceHostingPrecedences: fromJson(r.serviceHostingPrecedences, {}),
    roleAttributes: sortedStrings(r.roleAttributes),
    permissions: fromJson(r.permissions, []),
    envInfo: fromJson(r.envInfo, {}),
    sdkInfo: fromJson(r.sdkInfo, {}),
    externalId: r.externalId ?? null,
    hasApiSession: isSet(r.hasApiSession),
    ...edgeRouterConnection(ctx, r.id),
    interfaces: [],
    disabled: isSet(r.disabled),
    ...(r.disabledAt ? { disabledAt: r.disabledAt } : {}),
    ...(r.disabledUntil ? { disabledUntil: r.disabledUntil } : {}),
  }),
  toRow,
  hooks: {
    // `enrollment` starts the identity's enrollments in the same transaction (ott, ottca: a CA id, updb: a username).
    afterCreate: async (tx, id, input, ctx) => {
      const e = input.enrollment as { ott?: boolean; ottca?: string; updb?: string } | undefined;
      if (!e) return;
      const expiresAt = new Date(ctx.clock.now().getTime() + ctx.config.enrollmentTtlMinutes * 60_000);
      if (e.ott) await insertEnrollment(tx, ctx, newId(), { identityId: id, method: 'ott', expiresAt });
      if (e.ottca) await insertEnrollment(tx, ctx, newId(), { identityId: id, method: 'ottca', expiresAt, caId: e.ottca });
      if (e.updb) await insertEnrollment(tx, ctx, newId(), { identityId: id, method: 'updb', expiresAt, username: e.updb });
    },
    beforeDelete: async (tx, existing, ctx) => {
      if (isSet(existing.isDefaultAdmin)) throw cannotDelete('The default admin identity cannot be deleted');
      await checkRouterIdentityDelete(tx, existing, ctx);
      // Its API sessions go by cascade; a JWT one's access token lives on at 2.x routers unless revoked.
      await revokeDeletedIdentity(tx, ctx, String(existing.id));
    },
  },
  cli: {
    columns: ['id', 'name', 'type.name', 'isAdmin', 'permissions', 'roleAttributes', 'authenticators.updb.username', 'online=hasEdgeRouterConnection'],
    listFlags: { online: { help: 'only identities with an SDK connected to an edge router now (the filter hasEdgeRouterConnection = true)', filter: 'hasEdgeRouterConnection = true' } },
  },
});

// The identity found by its primary key (the session's identity id, a subquery PostgreSQL runs first),
// then its session joined: joined only, PostgreSQL (past its join_collapse_limit of eight tables) hashed
// every identity with its ten joins and then the session (4.4 ms on 5,000 identities, 0.3 so).
const rowOfSession = precompile<Row>((db, p) =>
  (listSource(identities).detailQuery(db) as AnyQuery)
    .innerJoin('apiSessions as sess', (j) => j.onRef('sess.identityId', '=', 'e.id').on('sess.tokenHash', '=', p(0)))
    .select(sessionColumns('sess'))
    .where(sql.ref('e.id'), '=', db.selectFrom('apiSessions').select('identityId').where('tokenHash', '=', p(0))),
);

/**
 * The API session with this token hash and (`rest`) its identity as the identity's detail query reads
 * it, in one statement (on PostgreSQL one wait on the server instead of two); undefined when there is
 * no such session. The session is checked as resolveSession checks any (model/auth/api-sessions.ts).
 */
export async function identityWithSession(ctx: Ctx, tokenHash: string): Promise<{ session: SessionWithIdentity; rest: Row } | undefined> {
  const r = await first(ctx.store.db, rowOfSession, [tokenHash]);
  if (!r) return undefined;
  return { session: takeSession(r, true), rest: r };
}
