// The service-change marker clients poll (GET /current-api-session/service-updates): moved in the
// transaction of every write that can change any identity's service list, so a client that sees an
// unchanged lastChangeAt can trust its cached list.
import { sql, type Kysely } from 'kysely';
import type { Db } from '../store/db.js';
import { first, precompile } from '../store/precompiled.js';
import { sessionColumns, takeSession, type SessionWithIdentity } from './auth/session-row.js';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { lockMembership } from './policy/membership.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Something that can change an identity's service list was written: the 'services' marker (what clients
 * poll) moves, and with it the 'access' marker (what the data plane's access watch reads:
 * fabric/access-watch.ts), unless `grants` is false: a posture response changes what passes, not who is
 * granted, and the watch judges posture on its own, so it need not re-read every grant for it.
 */
export async function touchServices(tx: AnyDb, ctx: Pick<Ctx, 'clock'>, o: { grants?: boolean } = {}) {
  await lockMembership(tx);
  const names = o.grants === false ? ['services'] : ['services', 'access'];
  const prev = await tx.selectFrom('changeMarkers').select(['name', 'changedAt']).where('name', 'in', names).execute();
  const now = ctx.clock.now().getTime();
  for (const name of names) {
    // Always forward, if only by a millisecond: the watch and polling clients tell a change by a new
    // value, and two changes in one millisecond (or under a clock that stands still, or steps back)
    // would otherwise read as none.
    const last = Date.parse(prev.find((p) => p.name === name)?.changedAt ?? '');
    const at = Number.isFinite(last) && last >= now ? new Date(last + 1) : new Date(now);
    await tx.updateTable('changeMarkers').set({ changedAt: iso(at) }).where('name', '=', name).execute();
  }
}

/** The markers a data plane watches: who is granted what (`access`), and anything clients see (`services`). */
export async function accessMarkers(db: Db): Promise<{ access: string; services: string }> {
  const rows = await db.selectFrom('changeMarkers').select(['name', 'changedAt']).where('name', 'in', ['access', 'services']).execute();
  const of = (n: string) => rows.find((r) => r.name === n)?.changedAt ?? '';
  return { access: of('access'), services: of('services') };
}

// The shared marker and the API session's latest posture response, as one row. By the session's id
// (an API token's or the local administrator's request), or with the session itself by its token's
// hash: the SDKs' poll, every few seconds per client, is then one statement (on PostgreSQL one wait
// instead of three: the session, the marker, the responses).
const changeColumns = (db: Db, apiSessionId: unknown) => [
  db.selectFrom('changeMarkers').select('changedAt').where('name', '=', 'services').as('shared'),
  db.selectFrom('postureResponses').select((eb) => eb.fn.max('updatedAt').as('at')).where('apiSessionId', '=', apiSessionId as string).as('posture'),
];
const bySessionId = precompile<Changes>((db, p) => db.selectNoFrom(changeColumns(db, p(0))) as never);
const withTheSession = precompile<Changes & Record<string, unknown>>((db, p) =>
  db
    .selectFrom('apiSessions as sess')
    .innerJoin('identities as i', 'i.id', 'sess.identityId')
    .select(sessionColumns('sess', 'i') as never)
    .select(changeColumns(db, sql.ref('sess.id')))
    .where('sess.tokenHash', '=', p(0)) as never,
);

interface Changes {
  shared?: string | null;
  posture?: string | null;
}
const latest = (c: Changes | undefined) => [c?.shared, c?.posture].filter((v): v is string => !!v).sort().at(-1) ?? new Date(0).toISOString();

/** When the calling API session's service list last changed: any shared change, or its own posture results. */
export async function lastServiceChange(db: Db, apiSessionId: string): Promise<string> {
  return latest(await first(db, bySessionId, [apiSessionId]));
}

/** The same with the API session of this token hash (`rest`), read in one statement; undefined when there is no such session. */
export async function lastServiceChangeWithSession(db: Db, tokenHash: string): Promise<{ session: SessionWithIdentity; rest: string } | undefined> {
  const r = await first(db, withTheSession, [tokenHash]);
  return r && { session: takeSession(r), rest: latest(r) };
}
