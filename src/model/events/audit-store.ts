// The stored audit: events kept in the database for a retention window (auditRetentionDays), for
// `ztc audit` and GET /audit-events. Entity changes are inserted by the write itself, inside its
// transaction (see record.ts): the audit row exists exactly when the change does, and costs one insert
// in a transaction that is open anyway. The other stored kinds (logins, enrollments, admin recovery) have
// no transaction of their own to ride in, and a login must not wait for one: they are queued and
// inserted in batches, a quarter second later, off the request path. API-session and service-session
// events are not stored: they come with every SDK login and dial (the hot paths), and their live rows
// are in their own tables; the events file and the stream carry them. (An API session ended by another
// identity's change, a password set or an identity disabled, is also an entity change: auth/revoke.ts.)
import { sql } from 'kysely';
import type { Db, Store, Tx } from '../../store/db.js';
import { precompile } from '../../store/precompiled.js';
import { iso } from '../clock.js';
import type { ZtcEvent } from './types.js';
import { kindOf } from './types.js';

/** Namespaces kept in the audit table. */
export const STORED: ReadonlySet<string> = new Set(['entityChange', 'authentication', 'enrollment', 'admin', 'posture', 'pki']);

/**
 * Whether an event is kept in the audit table: those of STORED, and the access log (edge#227): service
 * sessions made and refused, each naming what granted it or what was missing. Their rows are batched
 * off the request like logins'. Sessions ended are not kept (their API session's end, or an entity
 * change when the controller revoked them, says it), nor circuits (a busy network makes many a second:
 * the events file and the stream carry them, each naming its session and grant).
 */
export const isStored = (e: ZtcEvent): boolean => STORED.has(e.namespace) || (e.namespace === 'edge.sessions' && e.event_type !== 'deleted');

export interface AuditRow {
  id: string;
  at: string;
  namespace: string;
  eventType: string;
  entityType: string | null;
  entityId: string | null;
  entityName: string | null;
  actorId: string | null;
  actorName: string | null;
  body: string;
}

export function auditRow(id: string, e: ZtcEvent): AuditRow {
  let entityType = null;
  let entityId = null;
  let entityName = null;
  let actorId = null;
  let actorName = null;
  if (e.namespace === 'entityChange') {
    entityType = e.entityType;
    entityId = e.entityId;
    entityName = e.entityName ?? null;
    if (e.metadata.author.type === 'identity') {
      actorId = e.metadata.author.id;
      actorName = e.metadata.author.name;
    }
  } else if (e.namespace === 'enrollment' && e.router_id) {
    entityType = 'routers';
    entityId = e.router_id;
  } else if (e.namespace === 'authentication' || e.namespace === 'enrollment') {
    actorId = e.identity_id || null;
    entityType = 'identities';
    entityId = e.identity_id || null;
    entityName = e.namespace === 'authentication' ? (e.username ?? null) : null;
  } else if (e.namespace === 'posture') {
    // About the identity whose request it was, and done by it.
    actorId = e.identity_id;
    entityType = 'identities';
    entityId = e.identity_id;
  } else if (e.namespace === 'edge.sessions') {
    // Who reached what: the identity as the actor, the service as the entity.
    actorId = e.identity_id;
    actorName = e.identity_name ?? null;
    entityType = 'services';
    entityId = e.service_id;
    entityName = e.service_name ?? null;
  } else if (e.namespace === 'pki') {
    // The controller's own certificate: which one, by its role.
    entityType = 'pki';
    entityName = e.certificate;
  } else if (e.namespace === 'admin') {
    entityType = 'identities';
    entityId = e.identity_id;
    entityName = e.identity_name;
    actorName = `${e.os_user}@${e.host}`;
  }
  const clip = (s: string | null, n: number) => (s === null ? null : s.slice(0, n));
  return {
    id,
    at: e.timestamp,
    namespace: e.namespace,
    eventType: kindOf(e),
    entityType: clip(entityType, 64),
    entityId: clip(entityId, 64),
    entityName: clip(entityName, 255),
    actorId: clip(actorId, 64),
    actorName: clip(actorName, 255),
    body: JSON.stringify(e),
  };
}

const AUDIT_COLUMNS = ['id', 'at', 'namespace', 'eventType', 'entityType', 'entityId', 'entityName', 'actorId', 'actorName', 'body'] as const;
/** One row's insert, compiled once: every entity change makes one, inside its write. */
const insertOne = precompile((db, p) => db.insertInto('auditEvents').values(Object.fromEntries(AUDIT_COLUMNS.map((c, i) => [c, p(i)])) as never));

export async function insertAudit(tx: Tx | Db, rows: AuditRow[]) {
  if (rows.length === 1) {
    await tx.executeQuery(insertOne(tx, AUDIT_COLUMNS.map((c) => rows[0][c])));
    return;
  }
  // A few hundred rows a statement stays under every driver's bound-parameter limit.
  for (let i = 0; i < rows.length; i += 200) await tx.insertInto('auditEvents').values(rows.slice(i, i + 200)).execute();
}

/** Queues events for a batched insert, so the emitting request never waits for the database. */
export class AuditBatcher {
  private queue: AuditRow[] = [];
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  lastError?: string;

  constructor(private readonly store: Store, private readonly delayMs = 250) {}

  add(row: AuditRow) {
    // Bounded: a database that is down must not turn the queue into a leak.
    if (this.queue.length >= 100_000) this.queue.shift();
    this.queue.push(row);
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.delayMs);
      this.timer.unref();
    }
  }

  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.running) await this.running;
    if (!this.queue.length) return;
    const rows = this.queue;
    this.queue = [];
    this.running = this.store
      .write((tx) => insertAudit(tx, rows))
      .then(() => void (this.lastError = undefined), (err: Error) => void (this.lastError = err.message))
      .finally(() => (this.running = undefined));
    await this.running;
  }
}

/** Delete what is older than the retention window; returns how many rows went. */
export async function pruneAudit(db: Db, now: Date, retentionDays: number): Promise<number> {
  const cutoff = iso(new Date(now.getTime() - retentionDays * 86_400_000));
  const res = await db.deleteFrom('auditEvents').where('at', '<', cutoff).executeTakeFirst();
  return Number(res.numDeletedRows);
}

export interface AuditQuery {
  /** An entity's id or name (an identity's also finds its logins and enrollments, by either). */
  entity?: string;
  /** Only events at or after this time. */
  since?: Date;
  namespaces?: Set<string>;
  /** Only what this identity did. */
  actor?: string;
  limit: number;
  offset: number;
}

/** Newest first. */
export async function listAudit(db: Db, q: AuditQuery): Promise<{ events: ZtcEvent[]; totalCount: number }> {
  let base = db.selectFrom('auditEvents');
  if (q.entity) {
    const entity = q.entity;
    // By name, the same answer as by id: the events of every entity that name was seen on (logins and
    // enrollments carry only the identity's id), and of the identity that has it now (its creation may be
    // older than the retention window, its logins not).
    base = base.where((eb) =>
      eb.or([
        eb('entityId', '=', entity),
        eb('entityName', '=', entity),
        eb('entityId', 'in', eb.selectFrom('auditEvents as named').select('named.entityId').where('named.entityName', '=', entity).where('named.entityId', 'is not', null)),
        eb('entityId', 'in', eb.selectFrom('identities').select('identities.id').where('identities.name', '=', entity)),
      ]),
    );
  }
  if (q.actor) base = base.where((eb) => eb.or([eb('actorId', '=', q.actor!), eb('actorName', '=', q.actor!)]));
  if (q.since) base = base.where('at', '>=', iso(q.since));
  if (q.namespaces?.size) base = base.where('namespace', 'in', [...q.namespaces]);
  const count = await base.select(sql<number>`count(*)`.as('n')).executeTakeFirst();
  const rows = await base.select('body').orderBy('at', 'desc').orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute();
  return { events: rows.map((r) => JSON.parse(r.body) as ZtcEvent), totalCount: Number(count?.n ?? 0) };
}
