import { randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import type { Tx } from '../../store/db.js';
import { isSet } from '../../store/json.js';

import type { Ctx } from '../context.js';
import { ApiError, conflict, invalidField } from '../errors.js';
import { writeTx } from '../crud.js';
import { recordRowChange } from '../events/record.js';
import { hashSecret } from '../ids.js';
import { signEnrollmentJwt, tokenOf, type EnrollMethod } from '../pki/jwt.js';
import { aliases, baseDetail, baseFilterable, defineResource, entityRef, type Row } from '../resource.js';
import { identityRef } from './identity-links.js';
import { baseFields, DateTime, EntityRef, MapOf, Nullable, Username } from '../schemas/common.js';

const Method = Type.Union([Type.Literal('ott'), Type.Literal('ottca'), Type.Literal('updb')]);
export const enrollmentCreate = Type.Object(
  { identityId: Type.String({ minLength: 1, maxLength: 64 }), method: Method, expiresAt: DateTime, caId: Type.Optional(Nullable(Type.String({ maxLength: 64 }))), username: Type.Optional(Nullable(Username)) },
  { additionalProperties: false },
);
export const enrollmentRefresh = Type.Object({ expiresAt: DateTime }, { additionalProperties: false });
export const enrollmentDetail = Type.Object({
  ...baseFields, method: Type.String(), details: MapOf(Type.String()), token: Type.String(), jwt: Type.String(), expiresAt: Type.String(),
  identityId: Type.Optional(Type.String()), identity: Type.Optional(EntityRef),
  edgeRouterId: Type.Optional(Type.String()), edgeRouter: Type.Optional(EntityRef), transitRouterId: Type.Optional(Type.String()), transitRouter: Type.Optional(EntityRef), caId: Nullable(Type.String()), ca: Type.Optional(EntityRef), username: Type.Optional(Type.String()),
});

/** Which authenticator method an enrollment method produces. */
const producesMethod = (m: string) => (m === 'updb' ? 'updb' : 'cert');

export interface NewEnrollment {
  identityId: string;
  method: 'ott' | 'ottca' | 'updb';
  expiresAt: Date;
  caId?: string | null;
  username?: string | null;
}

/** Checks and column values of a new enrollment (its JWT included). One outstanding per method per identity. */
export async function enrollmentValues(tx: Tx, ctx: Ctx, e: NewEnrollment): Promise<Row> {
  if (e.expiresAt.getTime() <= ctx.clock.now().getTime() + 60_000) throw invalidField('expiresAt', 'must be at least a minute in the future', e.expiresAt.toISOString());
  const identity = await tx.selectFrom('identities').select('id').where('id', '=', e.identityId).executeTakeFirst();
  // Upstream's code for this one (400 REFERENCED_ENTITY_NOT_FOUND), with ztc's field cause.
  if (!identity) throw new ApiError(400, 'REFERENCED_ENTITY_NOT_FOUND', `The field 'identityId' is not valid: no identity has the id '${e.identityId}'`, { field: 'identityId', reason: `no identity has the id '${e.identityId}'`, value: e.identityId });
  const outstanding = await tx.selectFrom('enrollments').select('id').where('identityId', '=', e.identityId).where('method', '=', e.method).executeTakeFirst();
  if (outstanding) throw conflict('ENROLLMENT_EXISTS', `The identity already has an outstanding ${e.method} enrollment (${outstanding.id}): refresh or delete it`);
  const has = await tx.selectFrom('authenticators').select('id').where('identityId', '=', e.identityId).where('method', '=', producesMethod(e.method)).executeTakeFirst();
  if (has) throw conflict('MAX_AUTHENTICATOR_METHODS_REACHED', `The identity already has a ${producesMethod(e.method)} authenticator`);
  let caId: string | null = null;
  let username: string | null = null;
  if (e.method === 'ottca') {
    if (!e.caId) throw invalidField('caId', 'is required for method ottca');
    const ca = await tx.selectFrom('cas').select('id').where('id', '=', e.caId).executeTakeFirst();
    if (!ca) throw invalidField('caId', `no CA has the id '${e.caId}'`, e.caId);
    caId = e.caId;
  } else if (e.caId) {
    throw invalidField('caId', 'applies to method ottca only', e.caId);
  }
  if (e.method === 'updb') {
    if (!e.username) throw invalidField('username', 'is required for method updb');
    const taken = await tx.selectFrom('authenticators').select('id').where('username', '=', e.username).executeTakeFirst();
    const pending = await tx.selectFrom('enrollments').select('id').where('username', '=', e.username).executeTakeFirst();
    if (taken || pending) throw invalidField('username', `'${e.username}' is already taken`, e.username);
    username = e.username;
  } else if (e.username) {
    throw invalidField('username', 'applies to method updb only', e.username);
  }
  const token = randomUUID();
  const jwt = await signEnrollmentJwt(ctx, { subject: e.identityId, token, method: e.method as EnrollMethod, expiresAt: e.expiresAt, caId, username });
  return { identityId: e.identityId, method: e.method, tokenHash: hashSecret(token), jwt: ctx.sealer.seal(jwt), expiresAt: e.expiresAt.toISOString(), caId, username };
}

export async function insertEnrollment(tx: Tx, ctx: Ctx, id: string, e: NewEnrollment) {
  const now = ctx.clock.now().toISOString();
  const row = { id, createdAt: now, updatedAt: now, tags: '{}', ...(await enrollmentValues(tx, ctx, e)) };
  await tx.insertInto('enrollments').values(row as never).execute();
  await recordRowChange(tx, ctx, 'enrollments', 'created', id, null, row);
}

/**
 * A new expiry for an enrollment, as upstream: the token stays the same, so a JWT already handed out
 * works again until the new expiry; the JWT is signed again to carry it.
 */
export async function refreshEnrollment(ctx: Ctx, id: string, expiresAt: Date) {
  await writeTx(ctx, async (tx) => {
    const row = await tx.selectFrom('enrollments').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw new ApiError(404, 'NOT_FOUND', `The enrollment with id '${id}' was not found`);
    if (expiresAt.getTime() <= ctx.clock.now().getTime() + 60_000) throw invalidField('expiresAt', 'must be at least a minute in the future', expiresAt.toISOString());
    const token = tokenOf(ctx.sealer.open(row.jwt));
    const jwt = await signEnrollmentJwt(ctx, { subject: row.identityId ?? row.routerId ?? '', token, method: row.method as EnrollMethod, expiresAt, caId: row.caId, username: row.username });
    const changed = { jwt: ctx.sealer.seal(jwt), expiresAt: expiresAt.toISOString(), updatedAt: ctx.clock.now().toISOString() };
    await tx.updateTable('enrollments').set(changed).where('id', '=', id).execute();
    await recordRowChange(tx, ctx, 'enrollments', 'updated', id, row as never, { ...row, ...changed }, 'refresh');
  });
}

export function enrollmentDetailOf(r: Row, ctx: Ctx) {
  const jwt = ctx.sealer.open(r.jwt);
  return Object.assign(baseDetail('enrollments', r, { refresh: { href: `./enrollments/${r.id}/refresh`, method: 'POST' } }), {
    method: r.method, token: tokenOf(jwt), jwt, expiresAt: r.expiresAt, details: {},
    ...(r.identityId ? { identityId: r.identityId, identity: identityRef(r.identityId, r.identityName ?? '') } : {}),
    caId: r.caId ?? null, ...(r.caId ? { ca: entityRef('cas', r.caId, r.caName ?? '') } : {}),
    ...(r.username ? { username: r.username } : {}),
    ...(r.routerId && isSet(r.routerIsEdge) ? { edgeRouterId: r.routerId, edgeRouter: entityRef('edge-routers', r.routerId, r.routerName ?? '') } : {}),
    ...(r.routerId && !isSet(r.routerIsEdge) ? { transitRouterId: r.routerId, transitRouter: entityRef('transit-routers', r.routerId, r.routerName ?? '') } : {}),
  });
}

export const enrollments = defineResource({
  name: 'enrollment',
  plural: 'enrollments',
  table: 'enrollments',
  conflictsOn: ['create'],
  apis: ['management'],
  ops: ['list', 'get', 'create', 'delete'],
  description: 'Outstanding enrollments: one-time tokens (as JWTs) that let an identity obtain its certificate or password',
  schemas: { detail: enrollmentDetail, create: enrollmentCreate },
  filterable: {
    ...baseFilterable,
    token: { column: 'e.token_hash', type: 'string', sortable: true, encode: hashSecret },
    identity: { column: 'e.identity_id', type: 'string', sortable: true },
    edgeRouter: { column: 'e.router_id', type: 'string', sortable: true },
    transitRouter: { column: 'e.router_id', type: 'string', sortable: true },
    caId: { column: 'e.ca_id', type: 'string', sortable: true },
    ...aliases({
      method: { column: 'e.method', type: 'string', sortable: true },
      identityId: { column: 'e.identity_id', type: 'string', sortable: true },
      edgeRouterId: { column: 'e.router_id', type: 'string', sortable: true },
      transitRouterId: { column: 'e.router_id', type: 'string', sortable: true },
      username: { column: 'e.username', type: 'string', sortable: true },
      expiresAt: { column: 'e.expires_at', type: 'datetime', sortable: true },
    }),
  },
  detailQuery: (db) =>
    db
      .selectFrom('enrollments as e')
      .leftJoin('identities as i', 'i.id', 'e.identityId')
      .leftJoin('cas as c', 'c.id', 'e.caId')
      .leftJoin('routers as r', 'r.id', 'e.routerId')
      .selectAll('e')
      .select(['i.name as identityName', 'c.name as caName', 'r.name as routerName', 'r.isEdge as routerIsEdge']) as never,
  toDetail: (r, ctx) => enrollmentDetailOf(r, ctx),
  toRow: async (input, _mode, tx, ctx) => enrollmentValues(tx, ctx, { ...(input as NewEnrollment), expiresAt: new Date(input.expiresAt) }),
  cli: { columns: ['id', 'method', 'for=identity.name|edgeRouter.name|transitRouter.name', 'username', 'expiresAt'] },
});

export const isExpired = (ctx: Ctx, r: { expiresAt: string }) => Date.parse(r.expiresAt) <= ctx.clock.now().getTime();
