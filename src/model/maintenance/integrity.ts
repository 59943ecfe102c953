// The integrity scan: real checks of the invariants this controller keeps, each with its repair.
// One run at a time across every controller on the database: a run starts only by flipping the
// integrity_runs row from idle to running, naming its process as owner and keeping a heartbeat. A run
// whose process died is taken over: at once when that process was on this host, else when its
// heartbeat stops.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { sql, type Kysely } from 'kysely';
import { fromJson } from '../../store/json.js';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import { touchServices } from '../changes.js';
import { writeTx } from '../crud.js';
import { ApiError } from '../errors.js';
import { evaluateEntity, evaluatePolicy, expectedMembers, removeRole, SIDE_TABLES, storedMembers, type Side } from '../policy/membership.js';
import { policyShapes } from '../resources/policies.js';
import { indexRoleAttributes, indexTags } from '../../store/entity-index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export const MAX_FINDINGS = 1000;
const ZERO_TIME = '0001-01-01T00:00:00.000Z';
export const RUN_HEARTBEAT_MS = 5_000;
/** A run whose heartbeat is older than this is dead (three beats missed). */
export const RUN_STALE_MS = 3 * RUN_HEARTBEAT_MS;
/** This process, as an integrity run's owner: host, pid, and a nonce (pids are reused). */
const OWNER = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the process holding a run is gone: its heartbeat stopped, or it was on this host and has exited. */
export function holderGone(owner: string | null, heartbeatAt: string | null, now: Date): boolean {
  if (!owner || !heartbeatAt) return true;
  if (now.getTime() - Date.parse(heartbeatAt) > RUN_STALE_MS) return true;
  const parts = owner.split(':');
  const pid = Number(parts.at(-2));
  return parts.slice(0, -2).join(':') === os.hostname() && Number.isInteger(pid) && !processAlive(pid);
}

export interface Finding {
  description: string;
  fixed: boolean;
}

/** Entities with role attributes, the policy side they sit on, and where their rows are. */
const ROLE_ENTITIES = (Object.entries(SIDE_TABLES) as [Side, { table: string; where?: string }][]).map(([side, t]) => ({ side, ...t }));
/** Every table whose rows carry tags (and so entity_tags rows). */
const TAGGED = ['identities', 'services', 'routers', 'posture_checks', 'configs', 'config_types', 'cas', 'auth_policies', 'external_jwt_signers', 'edge_router_policies', 'service_edge_router_policies', 'service_policies', 'terminators', 'enrollments', 'authenticators', 'sessions'];

type Check = (db: AnyDb, fix: boolean, report: (description: string, fixed: boolean) => void, ctx: Ctx) => Promise<void>;

const sameSet = (a: string[], b: string[]) => a.length === b.length && [...a].sort().join('\u0000') === [...b].sort().join('\u0000');

const checks: Check[] = [
  // SQLite's own check of the file: pages, free list, and every index against its table. Nothing here
  // can repair a damaged file; a snapshot can.
  async (_db, _fix, report, ctx) => {
    for (const problem of ctx.store.integrityCheck?.() ?? []) report(`SQLite integrity_check: ${problem} (not repairable here: restore a snapshot)`, false);
  },
  // Role-attribute index rows match each entity's roleAttributes.
  async (db, fix, report) => {
    const indexed = await db.selectFrom('entityRoleAttributes').select(['entityId', 'attribute']).execute();
    const byEntity = new Map<string, string[]>();
    for (const r of indexed as { entityId: string; attribute: string }[]) byEntity.set(r.entityId, [...(byEntity.get(r.entityId) ?? []), r.attribute]);
    for (const e of ROLE_ENTITIES) {
      const rows = await sql<{ id: string; roleAttributes: string }>`select id, role_attributes from ${sql.table(e.table)}${e.where ? sql.raw(` where ${e.where}`) : sql``}`.execute(db);
      for (const r of rows.rows) {
        const want = [...new Set(fromJson<string[]>(r.roleAttributes, []))];
        if (!sameSet(want, byEntity.get(r.id) ?? [])) {
          if (fix) await indexRoleAttributes(db, r.id, want);
          report(`${e.table} ${r.id}: the role attribute index does not match its roleAttributes`, fix);
        }
      }
    }
  },
  // Tag index rows match each entity's tags.
  async (db, fix, report) => {
    const indexed = await db.selectFrom('entityTags').select(['entityId', 'tagKey', 'value']).execute();
    const byEntity = new Map<string, string[]>();
    for (const r of indexed as { entityId: string; tagKey: string; value: string | null }[]) byEntity.set(r.entityId, [...(byEntity.get(r.entityId) ?? []), `${r.tagKey}=${r.value}`]);
    for (const table of TAGGED) {
      const rows = await sql<{ id: string; tags: string }>`select id, tags from ${sql.table(table)}`.execute(db);
      for (const r of rows.rows) {
        const tags = fromJson<Record<string, unknown>>(r.tags, {});
        const want = Object.entries(tags ?? {}).map(([k, v]) => `${k}=${v === null ? null : String(v)}`);
        if (!sameSet(want, byEntity.get(r.id) ?? [])) {
          if (fix) await indexTags(db, r.id, tags);
          report(`${table} ${r.id}: the tag index does not match its tags`, fix);
        }
      }
    }
  },
  // Index rows of entities that no longer exist.
  async (db, fix, report) => {
    const all = TAGGED.map((t) => sql`select id from ${sql.table(t)}`);
    const existing = sql`(${sql.join(all, sql` union all `)})`;
    for (const table of ['entity_role_attributes', 'entity_tags', 'policy_members'] as const) {
      const orphans = await sql<{ entityId: string }>`select distinct entity_id from ${sql.table(table)} where entity_id not in ${existing}`.execute(db);
      for (const o of orphans.rows) {
        if (fix) await sql`delete from ${sql.table(table)} where entity_id = ${o.entityId}`.execute(db);
        report(`${table}: rows for entity ${o.entityId}, which does not exist`, fix);
      }
    }
  },
  // Policies naming entities (@id) that no longer exist (a delete drops the role from every policy; an
  // @id only adds its own entity, so dropping it widens nothing; databases from before kept it in AllOf ones).
  async (db, fix, report) => {
    for (const p of await policyShapes(db as never)) {
      for (const [side, roles] of Object.entries(p.sides) as [Side, string[]][]) {
        const e = ROLE_ENTITIES.find((x) => x.side === side)!;
        for (const role of roles.filter((r) => r.startsWith('@'))) {
          const found = await sql`select id from ${sql.table(e.table)} where id = ${role.slice(1)}`.execute(db);
          if (found.rows.length) continue;
          if (fix) {
            p.sides[side] = await removeRole(db, p.id, p.kind, side, role);
            await evaluatePolicy(db, p);
          }
          report(`policy ${p.id}: role ${role} names a ${side} that does not exist`, fix);
        }
      }
    }
  },
  // The denormalised policy membership equals a recomputation of every policy.
  async (db, fix, report, ctx) => {
    const policies = await policyShapes(db as never);
    const expected = await expectedMembers(db, policies);
    const stored = await storedMembers(db);
    const known = new Set(policies.map((p) => p.id));
    const wrong = new Set<string>();
    for (const m of expected) if (!stored.has(m)) wrong.add(m.split('|')[0]);
    for (const m of stored) if (!expected.has(m)) wrong.add(m.split('|')[0]);
    for (const id of wrong) {
      if (fix) {
        if (known.has(id)) await evaluatePolicy(db, policies.find((p) => p.id === id)!);
        else await db.deleteFrom('policyMembers').where('policyId', '=', id).execute();
      }
      report(`policy ${id}: its denormalised members are out of step with its roles`, fix);
    }
    const roleRows = await db.selectFrom('policyRoles').select(['policyId', 'side', 'role']).execute();
    const wantRoles = new Set(policies.flatMap((p) => Object.entries(p.sides).flatMap(([side, roles]) => (roles ?? []).map((r) => `${p.id}|${side}|${r}`))));
    const haveRoles = new Set((roleRows as { policyId: string; side: string; role: string }[]).map((r) => `${r.policyId}|${r.side}|${r.role}`));
    const badRoles = new Set([...wantRoles].filter((r) => !haveRoles.has(r)).concat([...haveRoles].filter((r) => !wantRoles.has(r))).map((r) => r.split('|')[0]));
    for (const id of badRoles) {
      if (fix) {
        const p = policies.find((x) => x.id === id);
        if (p) await evaluatePolicy(db, p);
        else await db.deleteFrom('policyRoles').where('policyId', '=', id).execute();
      }
      report(`policy ${id}: its role index is out of step with its roles`, fix);
    }
    if (fix && (wrong.size || badRoles.size)) await touchServices(db, ctx);
  },
  // Authenticators that cannot authenticate anyone.
  async (db, fix, report) => {
    const broken = await db
      .selectFrom('authenticators')
      .select(['id', 'method'])
      .where((eb) =>
        eb.or([
          eb.and([eb('method', '=', 'updb'), eb.or([eb('username', 'is', null), eb('passwordHash', 'is', null)])]),
          eb.and([eb('method', '=', 'cert'), eb.or([eb('certPem', 'is', null), eb('fingerprint', 'is', null)])]),
          eb('method', 'not in', ['updb', 'cert']),
          eb('identityId', 'not in', eb.selectFrom('identities').select('id')),
        ]),
      )
      .execute();
    for (const a of broken) {
      if (fix) await db.deleteFrom('authenticators').where('id', '=', a.id).execute();
      report(`authenticator ${a.id} (${a.method}): orphaned or missing its credential`, fix);
    }
  },
  // Enrollments that belong to nobody.
  async (db, fix, report) => {
    const orphans = await db.selectFrom('enrollments').select(['id', 'method']).where('identityId', 'is', null).where('routerId', 'is', null).execute();
    for (const e of orphans) {
      if (fix) await db.deleteFrom('enrollments').where('id', '=', e.id).execute();
      report(`enrollment ${e.id} (${e.method}): belongs to no identity or router`, fix);
    }
  },
  // Services with two configs of one type (the primary key prevents it; a repair keeps the first).
  async (db, fix, report) => {
    const wrongType = await db
      .selectFrom('serviceConfigs as sc')
      .innerJoin('configs as c', 'c.id', 'sc.configId')
      .select(['sc.serviceId', 'sc.configId', 'sc.configTypeId', 'c.configTypeId as actual'])
      .whereRef('c.configTypeId', '!=', 'sc.configTypeId')
      .execute();
    for (const w of wrongType) {
      if (fix) await db.deleteFrom('serviceConfigs').where('serviceId', '=', w.serviceId).where('configId', '=', w.configId).execute();
      report(`service ${w.serviceId}: config ${w.configId} is filed under type ${w.configTypeId} but is of type ${w.actual}`, fix);
    }
  },
  // The markers clients poll, and the default admin.
  async (db, fix, report, ctx) => {
    for (const name of ['services', 'access', 'policy-membership']) {
      const marker = await db.selectFrom('changeMarkers').select('name').where('name', '=', name).executeTakeFirst();
      if (!marker) {
        if (fix) await db.insertInto('changeMarkers').values({ name, changedAt: iso(ctx.clock.now()) }).execute();
        report(`the ${name} marker is missing`, fix);
      }
    }
    const admin = await db.selectFrom('identities').select('id').where('isDefaultAdmin', '=', 1).where('isAdmin', '=', 1).executeTakeFirst();
    if (!admin) report('there is no default admin identity (restart the controller with --admin-password to create one)', false);
  },
  // Entities whose policy membership was never computed (written around the model).
  async (db, fix, report) => {
    for (const e of ROLE_ENTITIES) {
      const missing = await sql<{ id: string; roleAttributes: string }>`
        select e.id, e.role_attributes from ${sql.table(e.table)} e
        where ${e.where ? sql.raw(`e.${e.where} and `) : sql``}exists (select 1 from policy_roles r where r.side = ${e.side} and r.role = '#all')
          and not exists (select 1 from policy_members m where m.entity_id = e.id and m.side = ${e.side})`.execute(db);
      for (const r of missing.rows) {
        if (fix) await evaluateEntity(db, e.side, r.id, fromJson<string[]>(r.roleAttributes, []));
        report(`${e.table} ${r.id}: not among the members of the #all policies`, fix);
      }
    }
  },
];

/** Run every check (fixing in one transaction when asked); stops collecting after MAX_FINDINGS. */
export async function scan(ctx: Ctx, fix: boolean): Promise<{ findings: Finding[]; tooMany: boolean }> {
  const findings: Finding[] = [];
  let tooMany = false;
  const report = (description: string, fixed: boolean) => {
    if (findings.length >= MAX_FINDINGS) tooMany = true;
    else findings.push({ description, fixed });
  };
  const run = async (db: AnyDb) => {
    for (const check of checks) await check(db, fix, report, ctx);
  };
  if (fix) await writeTx(ctx, async (tx) => run(tx as AnyDb));
  else await run(ctx.store.db as AnyDb);
  return { findings, tooMany };
}

/** Start a run in the background; 429 (as upstream) when one is already running (on any controller, in a live process). */
export async function startRun(ctx: Ctx, fix: boolean): Promise<{ done: Promise<void> }> {
  const db = ctx.store.db;
  const now = ctx.clock.now();
  const held = await db.selectFrom('integrityRuns').select(['inProgress', 'owner', 'heartbeatAt']).where('id', '=', 1).executeTakeFirstOrThrow();
  const busy = () => new ApiError(429, 'RATE_LIMITED', 'An integrity scan or fix is already running: wait a moment for it to finish and try again (its progress: GET /database/data-integrity-results, or ztc api GET /database/data-integrity-results)');
  if (Number(held.inProgress) && !holderGone(held.owner, held.heartbeatAt, now)) throw busy();
  // Compare and set: only one of several claimants (or controllers) gets the row as it was read.
  const claimed = await db
    .updateTable('integrityRuns')
    .set({ inProgress: 1, fixingErrors: fix ? 1 : 0, tooManyErrors: 0, startedAt: iso(now), endedAt: null, error: null, results: '[]', owner: OWNER, heartbeatAt: iso(now) })
    .where('id', '=', 1)
    .where('inProgress', '=', held.inProgress)
    .where((eb) => (held.owner === null ? eb('owner', 'is', null) : eb('owner', '=', held.owner)))
    .where((eb) => (held.heartbeatAt === null ? eb('heartbeatAt', 'is', null) : eb('heartbeatAt', '=', held.heartbeatAt)))
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) !== 1) throw busy();
  const beat = setInterval(() => {
    void db.updateTable('integrityRuns').set({ heartbeatAt: iso(ctx.clock.now()) }).where('id', '=', 1).where('owner', '=', OWNER).execute().catch(() => {});
  }, RUN_HEARTBEAT_MS);
  beat.unref();
  const done = (async () => {
    let error: string | null = null;
    let result: Awaited<ReturnType<typeof scan>> = { findings: [], tooMany: false };
    try {
      result = await scan(ctx, fix);
    } catch (e) {
      error = (e as Error).message;
    } finally {
      clearInterval(beat);
    }
    await db
      .updateTable('integrityRuns')
      .set({ inProgress: 0, endedAt: iso(ctx.clock.now()), error, results: JSON.stringify(result.findings), tooManyErrors: result.tooMany ? 1 : 0 })
      .where('id', '=', 1)
      .where('owner', '=', OWNER)
      .execute();
  })();
  return { done };
}

export async function runState(db: AnyDb, now: Date) {
  const r = await db.selectFrom('integrityRuns').selectAll().where('id', '=', 1).executeTakeFirstOrThrow();
  // A run whose process died will never finish: say so rather than let callers wait for it.
  const dead = !!Number(r.inProgress) && holderGone(r.owner, r.heartbeatAt, now);
  if (dead) r.error = 'the process running this scan stopped before it finished: start it again';
  return {
    inProgress: !!Number(r.inProgress) && !dead,
    fixingErrors: !!Number(r.fixingErrors),
    tooManyErrors: !!Number(r.tooManyErrors),
    // Never run yet: upstream's zero time and an empty error, as its clients expect strings.
    startTime: r.startedAt ?? ZERO_TIME,
    endTime: r.endedAt ?? ZERO_TIME,
    error: r.error ?? '',
    results: fromJson<Finding[]>(r.results, []),
  };
}
