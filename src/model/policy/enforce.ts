// Access taken away ends the sessions it granted (upstream's service-policy enforcer does the same): a
// service policy deleted or narrowed, a role attribute removed from an identity or a service, a service
// deleted, a posture check that no longer passes. A Dial or Bind session whose identity no longer holds
// a grant of its type on its service (or whose every granting policy has a failing posture check) is
// deleted, with an audit record and an edge.sessions event saying why; the data plane ends what the
// session carried on its next look at the store (fabric/fabric.ts sweep, fabric/ctrl/listener.ts sync),
// on every controller sharing the store.
//
// Set-based on purpose: a policy change can take access from thousands of identities at once, so the
// question is one statement over the sessions table, not one evaluation per session.
import { sql } from 'kysely';
import type { Tx } from '../../store/db.js';
import type { Ctx } from '../context.js';
import { writeTx } from '../crud.js';
import { sessionDeleted } from '../events/emit.js';
import { afterCommit, recordRowChange } from '../events/record.js';
import { checksOfPolicies, failingChecks, postureLeftToRouters, responsesFrom, RESPONSE_FIELDS } from '../posture/evaluate.js';
import { grantsForMany } from './access.js';

export interface Revocation {
  id: string;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  type: string;
  /** Why, for people: the audit action and the event's reason. */
  reason: string;
}

interface SessionRef {
  id: string;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  type: string;
}

const CHUNK = 500;
/** The reason of a session whose identity and service no longer share any edge router (fabric's check). */
const NO_ROUTER = 'access-lost: no edge router policy and service edge router policy share a router for it any more';

/**
 * Of uses that lost their router (data-plane.ts routerAccessLost), the sessions left with no router at
 * all have lost their access: revoked, once each (revokeSessions records a session deleted twice once).
 */
export function revokeRouterless(ctx: Ctx, lost: Iterable<Omit<Revocation, 'reason'> & { anyRouter: boolean }>): Promise<Revocation[]> {
  const nowhere = [...lost].filter((s) => !s.anyRouter).map(({ anyRouter: _, ...s }) => ({ ...s, reason: NO_ROUTER }));
  return nowhere.length ? revokeSessions(ctx, nowhere) : Promise.resolve([]);
}
const kindOf = (type: string) => (type === 'Bind' ? 'bind' : 'dial');

/** Sessions whose identity no longer holds a service policy of the session's type on its service. */
export async function sessionsWithoutGrant(ctx: Ctx): Promise<Revocation[]> {
  const rows = await ctx.store.db
    .selectFrom('sessions as s')
    .select(['s.id', 's.apiSessionId', 's.identityId', 's.serviceId', 's.type'])
    .where(
      sql<boolean>`not exists (select 1 from policy_members t inner join policy_members f on f.policy_id = t.policy_id and f.side = 'identity' and f.entity_id = s.identity_id
        where t.entity_id = s.service_id and t.side = 'service' and t.kind = (case when s.type = 'Bind' then 'bind' else 'dial' end))`,
    )
    .execute();
  return rows.map((r) => ({ ...r, reason: `access-lost: no service policy grants ${r.type} on the service any more` }));
}

/**
 * Sessions granted only through policies with posture checks, none of which passes now with the
 * responses of the session's API session. Time moves checks too (an MFA timeout), so this is asked
 * now and then, not only after a change; it costs nothing in a network without posture checks.
 */
export async function sessionsFailingPosture(ctx: Ctx): Promise<Revocation[]> {
  const db = ctx.store.db;
  // Policies with an enforced check: a report-only one (ziti#2095) never takes a session away.
  const checked = (
    await db
      .selectFrom('policyMembers as m')
      .innerJoin('postureChecks as c', 'c.id', 'm.entityId')
      .select('m.policyId')
      .distinct()
      .where('m.side', '=', 'posture-check')
      .where('c.reportOnly', '=', 0)
      .execute()
  ).map((r) => r.policyId);
  if (!checked.length) return [];
  const out: Revocation[] = [];
  const checks = await checksOfPolicies(db, checked);
  for (let i = 0; i < checked.length; i += CHUNK) {
    // Sessions with at least one grant through a checked policy of their type.
    const some = checked.slice(i, i + CHUNK);
    const sessions = (await db
      .selectFrom('sessions as s')
      .select(['s.id', 's.apiSessionId', 's.identityId', 's.serviceId', 's.type'])
      .where(
        sql<boolean>`exists (select 1 from policy_members t inner join policy_members f on f.policy_id = t.policy_id and f.side = 'identity' and f.entity_id = s.identity_id
          where t.entity_id = s.service_id and t.side = 'service' and t.kind = (case when s.type = 'Bind' then 'bind' else 'dial' end) and t.policy_id in (${sql.join(some)}))`,
      )
      .execute()) as SessionRef[];
    for (let j = 0; j < sessions.length; j += CHUNK) out.push(...(await failing(ctx, sessions.slice(j, j + CHUNK), checks)));
  }
  return [...new Map(out.map((r) => [r.id, r])).values()];
}

async function failing(ctx: Ctx, sessions: SessionRef[], checks: Awaited<ReturnType<typeof checksOfPolicies>>): Promise<Revocation[]> {
  const db = ctx.store.db;
  const [grants, responseRows, leftToRouters] = await Promise.all([
    grantsForMany(db, sessions.map((s) => s.identityId), sessions.map((s) => s.serviceId)),
    db.selectFrom('postureResponses').select(['apiSessionId', ...RESPONSE_FIELDS]).where('apiSessionId', 'in', [...new Set(sessions.map((s) => s.apiSessionId))]).execute(),
    // JWT API sessions whose SDK reports posture to 2.x routers only: those routers judge them.
    postureLeftToRouters(db, sessions.map((s) => s.apiSessionId)),
  ]);
  const bySession = new Map<string, typeof responseRows>();
  for (const r of responseRows) bySession.set(r.apiSessionId, [...(bySession.get(r.apiSessionId) ?? []), r]);
  const now = ctx.clock.now();
  const out: Revocation[] = [];
  for (const s of sessions) {
    if (leftToRouters.has(s.apiSessionId)) continue;
    const responses = responsesFrom(bySession.get(s.apiSessionId) ?? []);
    const mine = grants.filter((g) => g.identityId === s.identityId && g.serviceId === s.serviceId && g.kind === kindOf(s.type));
    // A grant through a policy without checks, or whose checks all pass, keeps the session.
    // Report-only checks (ziti#2095) never take a session away.
    const failed = mine.map((g) => failingChecks(checks.get(g.policyId) ?? [], responses, now).enforced);
    if (!mine.length || failed.some((f) => !f.length)) continue;
    const names = [...new Set(failed.flat().map((c) => c.name))];
    out.push({ ...s, reason: `access-lost: posture check${names.length > 1 ? 's' : ''} failing: ${names.join(', ')}` });
  }
  return out;
}

/**
 * Delete the sessions, each with its audit record (author: the controller) and its edge.sessions event.
 * A session already gone (another controller revoked it first, or its API session ended) is skipped, so
 * each revocation is recorded once. Returns those this call deleted.
 */
export async function revokeSessions(ctx: Ctx, list: Revocation[]): Promise<Revocation[]> {
  const done: Revocation[] = [];
  for (let i = 0; i < list.length; i += CHUNK) {
    const some = list.slice(i, i + CHUNK);
    await writeTx(ctx, async (tx: Tx) => {
      // What this statement deleted, not what a read saw: two controllers revoking at once record it once.
      const rows = await tx.deleteFrom('sessions').where('id', 'in', some.map((r) => r.id)).returningAll().execute();
      const why = new Map(some.map((r) => [r.id, r]));
      for (const row of rows) {
        const r = why.get(row.id)!;
        const { tokenHash: _h, tokenSealed: _s, ...before } = row;
        await recordRowChange(tx, ctx, 'sessions', 'deleted', row.id, before as never, null, r.reason);
        afterCommit(tx, ctx, { ...sessionDeleted(ctx, row as never), reason: r.reason } as never);
        done.push(r);
      }
    });
  }
  return done;
}

/** What one enforcement pass would revoke: sessions without a grant (when asked) and failing posture. */
export async function findRevocations(ctx: Ctx, o: { posture: boolean; grants?: boolean }): Promise<Revocation[]> {
  const lost = o.grants === false ? [] : await sessionsWithoutGrant(ctx);
  const posture = o.posture ? await sessionsFailingPosture(ctx) : [];
  const seen = new Set(lost.map((r) => r.id));
  return [...lost, ...posture.filter((r) => !seen.has(r.id))];
}
