// Entity changes, recorded where every write goes through (model/crud.ts: createIn, updateIn, deleteIn),
// so every resource has them without code of its own. The audit row is inserted in the write's
// transaction (see audit-store.ts for why); the event reaches the file and the stream only after that
// transaction committed. writeTx gives each write its own handle on the transaction (group commit runs
// several writes in one), and the events collected on it are published when its commit is known: a
// write that failed or was rolled back publishes nothing.
import type { Tx } from '../../store/db.js';
import type { Ctx } from '../context.js';
import { newId } from '../ids.js';
import type { ResourceDecl, Row } from '../resource.js';
import { VERSION } from '../../version.js';
import { auditRow, insertAudit } from './audit-store.js';
import { redactRow } from './redact.js';
import type { EntityChangeEvent, ZtcEvent } from './types.js';

const pending = new WeakMap<Tx, ZtcEvent[]>();

/** A handle on `tx` whose events are collected in `into` (for writeTx to publish after the commit). */
export function collecting(tx: Tx, into: ZtcEvent[]): Tx {
  const own = tx.withTables() as unknown as Tx;
  pending.set(own, into);
  return own;
}

export function publish(ctx: Ctx, events: ZtcEvent[]) {
  for (const e of events) ctx.events.emit(e, e.namespace === 'entityChange');
}

/** Emit after the transaction commits when the write runs in writeTx; at once otherwise. */
export function afterCommit(tx: Tx, ctx: Ctx, e: ZtcEvent) {
  const list = pending.get(tx);
  if (list) list.push(e);
  else ctx.events.emit(e, e.namespace === 'entityChange');
}

/** upstream's store names: service-policies -> servicePolicies. */
const entityType = (decl: ResourceDecl) => decl.plural.replace(/-(\w)/g, (_, c: string) => c.toUpperCase());

export function authorOf(ctx: Ctx): EntityChangeEvent['metadata'] {
  const a = ctx.actor;
  if (!a) return { author: { type: 'controller' }, source: { type: 'internal' }, version: VERSION };
  const source: EntityChangeEvent['metadata']['source'] = a.local
    ? { type: 'local', osUser: a.local.osUser, host: a.local.host }
    : { type: 'rest', auth: a.apiTokenId ? 'token' : 'edge', remoteAddr: a.remoteAddress, method: a.method, ...(a.apiSessionId ? { apiSessionId: a.apiSessionId } : {}), ...(a.apiTokenId ? { apiTokenId: a.apiTokenId } : {}) };
  return { author: { type: 'identity', id: a.identityId, name: a.identityName }, source, version: VERSION };
}

/** Record one change of an entity inside its write's transaction. */
export async function recordChange(tx: Tx, ctx: Ctx, decl: ResourceDecl, eventType: EntityChangeEvent['eventType'], id: string, before: Row | null, after: Row | null, action?: string) {
  await recordRowChange(tx, ctx, entityType(decl), eventType, id, before, after, action);
}

/**
 * Record a change of a stored row that no resource declaration covers, or made outside the generic
 * crud (MFA enrolment, posture responses, PKI actions, revoked API sessions...): the same event and audit
 * row as crud's, in the write's transaction. `type` is upstream's store name where it has the entity
 * (mfas, apiSessions, authenticators, enrollments, cas), ztc's table name otherwise.
 */
export async function recordRowChange(tx: Tx, ctx: Ctx, type: string, eventType: EntityChangeEvent['eventType'], id: string, before: Row | null, after: Row | null, action?: string) {
  const named = after ?? before ?? {};
  const name = typeof named.name === 'string' ? named.name : typeof named.username === 'string' ? named.username : undefined;
  const event = ctx.events.stamp<EntityChangeEvent>({
    namespace: 'entityChange',
    eventId: newId(12),
    eventType,
    metadata: authorOf(ctx),
    entityType: type,
    entityId: id,
    ...(name !== undefined ? { entityName: name } : {}),
    isParentEvent: false,
    ...(action ? { action } : {}),
    initialState: before && redactRow(before),
    finalState: after && redactRow(after),
  });
  await insertAudit(tx, [auditRow(event.eventId, event)]);
  afterCommit(tx, ctx, event);
}
