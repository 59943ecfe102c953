// Posture: the responses a client submitted (per API session) against the checks of the service
// policies that grant it a service. A policy passes when every one of its checks passes.
import { sql, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../../store/db.js';
import { fromJson, isSet } from '../../store/json.js';
import { all, precompile } from '../../store/precompiled.js';
import { iso } from '../clock.js';
import type { Ctx } from '../context.js';
import type { Grant } from '../policy/access.js';
import type { PolicyKind } from '../policy/membership.js';
import type { CheckType } from '../resources/posture-checks.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** Where the API session's MFA and endpoint-state events are kept among its posture responses. */
export const MFA_KEY = '#mfa';
export const ENDPOINT_STATE_KEY = '#endpoint-state';

export interface Check {
  id: string;
  name: string;
  typeId: CheckType;
  data: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  createdAt: string;
  updatedAt: string;
  tags: string;
  /** Failures are recorded, never enforced (ziti#2095). */
  reportOnly: boolean;
}

export interface Response {
  typeId: string;
  data: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  updatedAt: string;
}

export type Responses = Map<string, Response>;

export const RESPONSE_FIELDS = ['checkId', 'typeId', 'data', 'updatedAt'] as const;
/** An API session's posture responses, as rows (`apiSessionId` a value or the session's column). */
export const responsesQuery = (db: AnyDb, apiSessionId: unknown) =>
  db.selectFrom('postureResponses').select(RESPONSE_FIELDS).where('apiSessionId', '=', apiSessionId as string);

/** Responses by check, from the rows of responsesQuery. */
export const responsesFrom = (rows: { checkId: string; typeId: string; data: string; updatedAt: string }[]): Responses =>
  new Map(rows.map((r) => [r.checkId, { typeId: r.typeId, data: fromJson(r.data, {}), updatedAt: r.updatedAt }]));

export async function responsesOf(db: AnyDb, apiSessionId: string): Promise<Responses> {
  return responsesFrom(await responsesQuery(db, apiSessionId).execute());
}

/** Whether an SDK sent these responses itself (not only the API session's MFA and endpoint-state records, kept under '#' keys). */
export const hasSdkResponses = (r: Responses) => [...r.keys()].some((k) => !k.startsWith('#'));

/**
 * JWT API sessions (OIDC logins) whose posture this controller leaves to 2.x routers: those among `ids`
 * whose SDK sent the controller no posture responses. Current SDKs send their responses to every router
 * that takes them (2.x routers, which judge a JWT session's posture themselves against the router data
 * model's checks: upstream 2.0.3 evaluates posture at session creation only for legacy sessions) and to
 * the controller only while one of their routers does not (ztc's embedded router). A controller that
 * judged these anyway would refuse, and revoke, what the routers grant. A legacy (zt-session) API
 * session is always judged here.
 */
export async function postureLeftToRouters(db: AnyDb, ids: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  const unique = [...new Set(ids)];
  for (let i = 0; i < unique.length; i += 500) {
    const some = unique.slice(i, i + 500);
    const rows = await db
      .selectFrom('apiSessions as a')
      .select('a.id')
      .where('a.id', 'in', some)
      .where('a.expiresAt', 'is not', null)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('postureResponses as r').select('r.apiSessionId').whereRef('r.apiSessionId', '=', 'a.id').where('r.checkId', 'not like', '#%'))))
      .execute();
    for (const r of rows) out.add(r.id as string);
  }
  return out;
}

/** What a check's queries select: the policy that holds it (`m`) and the check (`c`). */
const CHECK_COLUMNS = ['m.policyId', 'c.id', 'c.name', 'c.typeId', 'c.data', 'c.createdAt', 'c.updatedAt', 'c.tags', 'c.reportOnly'] as const;
/** The same columns as named in a row, for reading the rows as JSON (dialect jsonRows). */
export const CHECK_FIELDS = CHECK_COLUMNS.map((c) => c.slice(2));

/**
 * The posture checks each policy selects, one query for a set of policies. For an identity's own
 * policies, checksOfIdentity below.
 */
export async function checksOfPolicies(db: AnyDb, policyIds: string[]): Promise<Map<string, Check[]>> {
  if (!policyIds.length) return new Map();
  return byPolicy(
    await db
      .selectFrom('policyMembers as m')
      .innerJoin('postureChecks as c', 'c.id', 'm.entityId')
      .select(CHECK_COLUMNS)
      .where('m.side', '=', 'posture-check')
      .where('m.policyId', 'in', [...new Set(policyIds)])
      .orderBy('c.name')
      .execute(),
  );
}

// From the checks, each membership kept when the identity is in its policy (a primary-key probe): a
// network has few checks, often none (then this ends at once: 2 us, where listing the identity's
// policies first took 18 us on the Medium model with no checks at all).
export const identityChecks = (db: AnyDb, identityId: unknown, kinds: (ref: RawBuilder<unknown>) => RawBuilder<SqlBool>) =>
  db
    .selectFrom('postureChecks as c')
    .crossJoin('policyMembers as m')
    .select(CHECK_COLUMNS)
    .whereRef('m.entityId', '=', 'c.id')
    .where('m.side', '=', 'posture-check')
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('policyMembers as f')
          .select('f.policyId')
          .whereRef('f.policyId', '=', 'm.policyId')
          .where('f.side', '=', 'identity')
          .where('f.entityId', '=', identityId as string)
          .where(kinds(sql.ref('f.kind'))),
      ),
    )
    .orderBy('c.name');
const ofIdentity = precompile((db, p) => identityChecks(db, p(0), (k) => p.anyOf(k, 1)));

/**
 * The checks of every policy of these kinds that selects the identity, compiled once: sent beside the
 * read of the grants rather than after it (on PostgreSQL one round trip fewer), on every service list.
 */
export async function checksOfIdentity(db: Db, identityId: string, kinds: PolicyKind[]): Promise<Map<string, Check[]>> {
  return byPolicy(await all(db, ofIdentity, [identityId, kinds]));
}

export function byPolicy(rows: unknown[]): Map<string, Check[]> {
  const out = new Map<string, Check[]>();
  for (const r of rows as (Omit<Check, 'data' | 'reportOnly'> & { policyId: string; data: string; reportOnly: unknown })[]) {
    const list = out.get(r.policyId) ?? [];
    list.push({ ...r, data: fromJson(r.data, {}), reportOnly: isSet(r.reportOnly) });
    out.set(r.policyId, list);
  }
  return out;
}

const norm = (s: unknown) => String(s ?? '').trim().toLowerCase();
const normMac = (s: unknown) => norm(s).replace(/[^0-9a-f]/g, '');

/** "10.0.19041" against ">=10.0.19041", "<11", "=10.0" or a bare prefix such as "10.0". */
export function versionMatches(version: string, constraint: string): boolean {
  const m = /^\s*(>=|<=|>|<|==?)?\s*v?([0-9][0-9a-zA-Z.\-+]*)\s*$/.exec(constraint);
  if (!m) return false;
  const op = m[1] ?? '';
  const parts = (v: string) => v.split(/[.\-+]/).map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  const a = parts(version);
  const b = parts(m[2]);
  let cmp = 0;
  for (let i = 0; i < Math.max(a.length, b.length) && cmp === 0; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    cmp = typeof x === 'number' && typeof y === 'number' ? Math.sign(x - y) : String(x).localeCompare(String(y));
  }
  if (op === '') return version === m[2] || version.startsWith(`${m[2]}.`);
  return op === '>=' ? cmp >= 0 : op === '<=' ? cmp <= 0 : op === '>' ? cmp > 0 : op === '<' ? cmp < 0 : cmp === 0;
}

interface ProcessResponse {
  path?: string;
  isRunning?: boolean;
  hash?: string;
  signerFingerprints?: string[];
}

function processPasses(want: { path: string; hashes?: string[]; signerFingerprint?: string; signerFingerprints?: string[] }, got: ProcessResponse | undefined): boolean {
  if (!got || !got.isRunning || norm(got.path) !== norm(want.path)) return false;
  if (want.hashes?.length && !want.hashes.map(norm).includes(norm(got.hash))) return false;
  const signers = [...(want.signerFingerprints ?? []), ...(want.signerFingerprint ? [want.signerFingerprint] : [])].map(norm);
  if (signers.length && !(got.signerFingerprints ?? []).some((f) => signers.includes(norm(f)))) return false;
  return true;
}

export interface Outcome {
  isPassing: boolean;
  /** Seconds the check stays valid (MFA checks with a timeout), or -1. */
  timeout: number;
  timeoutRemaining: number;
}

/** One check against one API session's responses. */
export function evaluateCheck(check: Check, responses: Responses, now: Date): Outcome {
  const r = responses.get(check.id)?.data;
  const d = check.data;
  const untimed = (isPassing: boolean): Outcome => ({ isPassing, timeout: -1, timeoutRemaining: -1 });
  switch (check.typeId) {
    case 'DOMAIN':
      return untimed(!!r && (d.domains as string[]).map(norm).includes(norm(r.domain)));
    case 'MAC':
      return untimed(!!r && ((r.macAddresses as string[]) ?? []).some((m) => (d.macAddresses as string[]).map(normMac).includes(normMac(m))));
    case 'OS':
      return untimed(
        !!r && (d.operatingSystems as { type: string; versions?: string[] }[]).some((os) => norm(os.type) === norm(r.type) && (!os.versions?.length || os.versions.some((v) => versionMatches(String(r.version ?? ''), v)))),
      );
    case 'PROCESS':
      return untimed(processPasses(d.process, (r?.processes as Record<string, ProcessResponse> | undefined)?.[norm(d.process.path)]));
    case 'PROCESS_MULTI': {
      const got = (r?.processes as Record<string, ProcessResponse> | undefined) ?? {};
      const results = (d.processes as { path: string }[]).map((p) => processPasses(p, got[norm(p.path)]));
      return untimed(d.semantic === 'AnyOf' ? results.some(Boolean) : results.every(Boolean));
    }
    case 'MFA': {
      const mfa = responses.get(MFA_KEY);
      const timeout = Number(d.timeoutSeconds ?? -1);
      if (!mfa) return { isPassing: false, timeout, timeoutRemaining: timeout > 0 ? 0 : -1 };
      const passedAt = Date.parse(mfa.updatedAt);
      const state = responses.get(ENDPOINT_STATE_KEY);
      // A wake or unlock after the last MFA asks for MFA again, when the check says so.
      const stale = !!state && Date.parse(state.updatedAt) > passedAt && ((d.promptOnWake && state.data.woken) || (d.promptOnUnlock && state.data.unlocked));
      if (timeout <= 0) return { isPassing: !stale, timeout: -1, timeoutRemaining: -1 };
      const remaining = Math.max(0, Math.floor(timeout - (now.getTime() - passedAt) / 1000));
      return { isPassing: !stale && remaining > 0, timeout, timeoutRemaining: stale ? 0 : remaining };
    }
  }
  return untimed(false);
}

/**
 * A policy's checks that fail now, split: those that deny (`enforced`) and the report-only ones, whose
 * failures are recorded but deny nothing (ziti#2095). A policy passes when `enforced` is empty.
 */
export function failingChecks(list: readonly Check[], responses: Responses, now: Date): { enforced: Check[]; reported: Check[] } {
  const enforced: Check[] = [];
  const reported: Check[] = [];
  for (const c of list) if (!evaluateCheck(c, responses, now).isPassing) (c.reportOnly ? reported : enforced).push(c);
  return { enforced, reported };
}

/** Go's zero time: what upstream answers for an MFA event that never happened. */
const NEVER = '0001-01-01T00:00:00.000Z';

function processActual(want: { osType?: string; path: string }, got: ProcessResponse | undefined) {
  return { osType: want.osType, path: want.path, isRunning: !!got?.isRunning, hash: got?.hash ?? '', signerFingerprints: got?.signerFingerprints ?? [] };
}

/**
 * What a failed check expected and what the client had reported, in upstream's shape for the check's
 * type (a failed service request's `checks[]`): actualValue and expectedValue, plus MFA's criteria and
 * PROCESS_MULTI's semantic.
 */
export function failureValues(check: Check, responses: Responses, now: Date): Record<string, unknown> {
  const r = responses.get(check.id)?.data ?? {};
  const d = check.data;
  const procs = (r.processes as Record<string, ProcessResponse> | undefined) ?? {};
  switch (check.typeId) {
    case 'DOMAIN':
      return { actualValue: String(r.domain ?? ''), expectedValue: d.domains ?? [] };
    case 'MAC':
      return { actualValue: (r.macAddresses as string[] | undefined) ?? [], expectedValue: d.macAddresses ?? [] };
    case 'OS':
      return { actualValue: { type: String(r.type ?? ''), version: String(r.version ?? '') }, expectedValue: (d.operatingSystems as { type: string; versions?: string[] }[]).map((o) => ({ type: o.type, versions: o.versions ?? [] })) };
    case 'PROCESS':
      return { actualValue: processActual(d.process, procs[norm(d.process.path)]), expectedValue: { osType: d.process.osType, path: d.process.path, hashes: d.process.hashes ?? [], signerFingerprint: d.process.signerFingerprint ?? '' } };
    case 'PROCESS_MULTI':
      return {
        semantic: d.semantic ?? 'AllOf',
        actualValue: (d.processes as { osType: string; path: string }[]).map((p) => processActual(p, procs[norm(p.path)])),
        expectedValue: (d.processes as { osType: string; path: string; hashes?: string[]; signerFingerprints?: string[] }[]).map((p) => ({ osType: p.osType, path: p.path, hashes: p.hashes ?? [], signerFingerprints: p.signerFingerprints ?? [] })),
      };
    case 'MFA': {
      const mfa = responses.get(MFA_KEY);
      const state = responses.get(ENDPOINT_STATE_KEY);
      const o = evaluateCheck(check, responses, now);
      const timeout = Number(d.timeoutSeconds ?? -1);
      const stateAt = state?.updatedAt ?? NEVER;
      return {
        actualValue: { passedMfa: !!mfa, passedOnWake: !(d.promptOnWake && state?.data.woken && mfa && stateAt > mfa.updatedAt), passedOnUnlock: !(d.promptOnUnlock && state?.data.unlocked && mfa && stateAt > mfa.updatedAt), timedOut: timeout > 0 && !!mfa && o.timeoutRemaining === 0 },
        expectedValue: { passedMfa: true, passedOnWake: !!d.promptOnWake, passedOnUnlock: !!d.promptOnUnlock, timedOut: false },
        criteria: {
          passedMfaAt: mfa?.updatedAt ?? NEVER,
          wokenAt: state?.data.woken ? stateAt : NEVER,
          unlockedAt: state?.data.unlocked ? stateAt : NEVER,
          timeoutSeconds: timeout,
          timeoutRemainingSeconds: o.timeoutRemaining,
        },
      };
    }
  }
  return { actualValue: '', expectedValue: [] };
}

/**
 * The postureQueries of a service, as its client sees them: one entry per granting policy. A report-only
 * check is listed (so the client keeps reporting what it checks) as passing, since it denies nothing,
 * with ztc's reportOnly: true and wouldPass, its real result.
 */
export function postureQueries(grants: Grant[], checks: Map<string, Check[]>, responses: Responses, now: Date) {
  return grants.map((g) => {
    const queries = (checks.get(g.policyId) ?? []).map((c) => {
      const real = evaluateCheck(c, responses, now);
      const o = c.reportOnly ? { ...real, isPassing: true } : real;
      return {
        id: c.id,
        _links: { self: { href: `./posture-checks/${c.id}` } },
        createdAt: c.createdAt,
        updatedAt: c.updatedAt,
        tags: fromJson(c.tags, {}),
        queryType: c.typeId,
        isPassing: o.isPassing,
        timeout: o.timeout,
        timeoutRemaining: o.timeoutRemaining,
        // 2.x: when a timed check runs out, and what an MFA check asks again after (upstream's service_api_model.go).
        ...(o.timeoutRemaining >= 0 ? { timeoutAt: iso(new Date(now.getTime() + o.timeoutRemaining * 1000)) } : {}),
        ...(c.typeId === 'MFA' ? { promptOnWake: !!c.data.promptOnWake, promptOnUnlock: !!c.data.promptOnUnlock } : {}),
        ...(c.typeId === 'PROCESS' ? { process: { osType: c.data.process.osType, path: c.data.process.path } } : {}),
        ...(c.typeId === 'PROCESS_MULTI' ? { processes: (c.data.processes as { osType: string; path: string }[]).map((p) => ({ osType: p.osType, path: p.path })) } : {}),
        ...(c.reportOnly ? { reportOnly: true, wouldPass: real.isPassing } : {}),
      };
    });
    return { policyId: g.policyId, policyType: g.kind === 'dial' ? 'Dial' : g.kind === 'bind' ? 'Bind' : 'Invalid', isPassing: queries.every((q) => q.isPassing), postureQueries: queries };
  });
}

/** Record that the API session passed MFA now (login completion or enrollment verification). */
export async function recordMfaPassed(ctx: Ctx, apiSessionId: string, identityId: string) {
  await storeResponse(ctx.store.db, { apiSessionId, identityId, checkId: MFA_KEY, typeId: 'MFA', data: { passedAt: iso(ctx.clock.now()) }, at: iso(ctx.clock.now()) });
}

export async function storeResponse(db: AnyDb, r: { apiSessionId: string; identityId: string; checkId: string; typeId: string; data: Record<string, unknown>; at: string }) {
  await db
    .insertInto('postureResponses')
    .values({ apiSessionId: r.apiSessionId, identityId: r.identityId, checkId: r.checkId, typeId: r.typeId, data: JSON.stringify(r.data), updatedAt: r.at })
    .onConflict((oc) => oc.columns(['apiSessionId', 'checkId']).doUpdateSet({ typeId: r.typeId, data: JSON.stringify(r.data), updatedAt: r.at }))
    .execute();
}
