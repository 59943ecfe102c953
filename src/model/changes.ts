// The service-change marker clients poll (GET /current-api-session/service-updates): moved in the
// transaction of every write that can change any identity's service list, so a client that sees an
// unchanged lastChangeAt can trust its cached list.
import { sql, type Kysely } from 'kysely';
import type { Db } from '../store/db.js';
import { first, precompile } from '../store/precompiled.js';
import { sessionColumns, takeSession, type SessionWithIdentity } from './auth/api-sessions.js';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { lockMembership } from './policy/membership.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function touchServices(tx: AnyDb, ctx: Pick<Ctx, 'clock'>) {
  await lockMembership(tx);
  // Always forward, if only by a millisecond: the data plane's access watch (fabric/access-watch.ts)
  // and polling clients tell a change by a new value, and two changes in one millisecond (or under a
  // clock that stands still, or steps back) would otherwise read as none.
  const prev = await tx.selectFrom('changeMarkers').select('changedAt').where('name', '=', 'services').executeTakeFirst();
  const now = ctx.clock.now().getTime();
  const last = prev ? Date.parse(prev.changedAt) : NaN;
  const at = Number.isFinite(last) && last >= now ? new Date(last + 1) : new Date(now);
  await tx.updateTable('changeMarkers').set({ changedAt: iso(at) }).where('name', '=', 'services').execute();
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
