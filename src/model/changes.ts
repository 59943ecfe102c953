// The service-change marker clients poll (GET /current-api-session/service-updates): moved in the
// transaction of every write that can change any identity's service list, so a client that sees an
// unchanged lastChangeAt can trust its cached list.
import type { Kysely } from 'kysely';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { lockMembership } from './policy/membership.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function touchServices(tx: AnyDb, ctx: Pick<Ctx, 'clock'>) {
  await lockMembership(tx);
  await tx.updateTable('changeMarkers').set({ changedAt: iso(ctx.clock.now()) }).where('name', '=', 'services').execute();
}

/** When the calling API session's service list last changed: any shared change, or its own posture results. */
export async function lastServiceChange(db: AnyDb, apiSessionId: string): Promise<string> {
  const shared = await db.selectFrom('changeMarkers').select('changedAt').where('name', '=', 'services').executeTakeFirst();
  const posture = await db.selectFrom('postureResponses').select((eb) => eb.fn.max('updatedAt').as('at')).where('apiSessionId', '=', apiSessionId).executeTakeFirst();
  const candidates = [shared?.changedAt, posture?.at as string | null | undefined].filter((v): v is string => !!v);
  return candidates.sort().at(-1) ?? new Date(0).toISOString();
}
