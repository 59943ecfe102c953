// The policy advisor: for identity/service pairs, whether the identity can dial and bind the service,
// through which edge routers, and every reason it cannot. All pairs are judged from a fixed number of
// set queries (identities, services, grants, router reach, routers, posture checks and responses), so
// checking a whole network is not one round of queries per pair.
import type { Kysely } from 'kysely';
import { fromJson } from '../../store/json.js';
import { evaluateCheck, checksOfPolicies, type Check, type Responses } from '../posture/evaluate.js';
import type { PolicyKind } from './membership.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export type ReasonCode =
  | 'IDENTITY_DISABLED'
  | 'IDENTITY_NOT_ENROLLED'
  | 'MFA_MISSING'
  | 'NO_SERVICE_POLICY'
  | 'NO_EDGE_ROUTER_POLICY'
  | 'NO_SERVICE_EDGE_ROUTER_POLICY'
  | 'NO_COMMON_ROUTER'
  | 'ROUTER_NOT_READY'
  | 'POSTURE_CHECKS_REQUIRED'
  | 'POSTURE_CHECKS_FAILING'
  | 'NO_REACHABLE_TERMINATOR';

export interface Reason {
  code: ReasonCode;
  message: string;
}

export interface ActionAdvice {
  allowed: boolean;
  /** The service policies granting this action. */
  policies: { id: string; name: string }[];
  reasons: Reason[];
}

export interface PairAdvice {
  identity: { id: string; name: string };
  service: { id: string; name: string };
  dial: ActionAdvice;
  bind: ActionAdvice;
  /** Edge routers both sides may use; `usable` when enrolled, verified and not disabled. */
  edgeRouters: { id: string; name: string; usable: boolean }[];
}

interface IdentityFacts {
  id: string;
  name: string;
  disabled: boolean;
  enrolled: boolean;
  hasMfa: boolean;
  loginNeedsTotp: boolean;
  /** Posture responses per API session of the identity. */
  sessions: Responses[];
}

const groupPairs = (rows: { a: string; b: string }[]) => {
  const m = new Map<string, Set<string>>();
  for (const r of rows) (m.get(r.a) ?? m.set(r.a, new Set()).get(r.a)!).add(r.b);
  return m;
};

/**
 * Advice for every pair of the chosen identities and services (all of either when not given), ordered by
 * identity name then service name.
 */
export async function advisePairs(db: AnyDb, sel: { identityIds?: string[]; serviceIds?: string[] }, now: Date): Promise<PairAdvice[]> {
  const onlyIdentities = <Q extends { where: (...a: never[]) => Q }>(q: Q, col: string): Q => (sel.identityIds ? (q.where as (...a: unknown[]) => Q)(col, 'in', sel.identityIds) : q);
  const onlyServices = <Q extends { where: (...a: never[]) => Q }>(q: Q, col: string): Q => (sel.serviceIds ? (q.where as (...a: unknown[]) => Q)(col, 'in', sel.serviceIds) : q);
  if (sel.identityIds?.length === 0 || sel.serviceIds?.length === 0) return [];

  const [identityRows, serviceRows, authenticated, mfa, grants, identityRouters, serviceRouters, routers, terminatorRows, linkRows] = await Promise.all([
    onlyIdentities(db.selectFrom('identities as i').leftJoin('authPolicies as ap', 'ap.id', 'i.authPolicyId').select(['i.id', 'i.name', 'i.disabled', 'ap.secondaryJson']), 'i.id').orderBy('i.name').execute(),
    onlyServices(db.selectFrom('services').select(['id', 'name']), 'id').orderBy('name').execute(),
    onlyIdentities(db.selectFrom('authenticators').select('identityId').distinct(), 'identityId').execute(),
    onlyIdentities(db.selectFrom('mfa').select('identityId').where('isVerified', '=', 1), 'identityId').execute(),
    onlyServices(
      onlyIdentities(
        db
          .selectFrom('policyMembers as f')
          .innerJoin('policyMembers as t', (j) => j.onRef('t.policyId', '=', 'f.policyId').on('t.side', '=', 'service'))
          .innerJoin('servicePolicies as p', 'p.id', 'f.policyId')
          .select(['f.entityId as identityId', 't.entityId as serviceId', 'f.policyId as policyId', 'f.kind as kind', 'p.name as policyName'])
          .where('f.side', '=', 'identity')
          .where('f.kind', 'in', ['dial', 'bind'] as PolicyKind[]),
        'f.entityId',
      ),
      't.entityId',
    ).execute(),
    onlyIdentities(reach(db, 'identity', 'erp'), 'f.entityId').execute(),
    onlyServices(reach(db, 'service', 'serp'), 'f.entityId').execute(),
    db.selectFrom('routers').select(['id', 'name', 'isVerified', 'disabled', 'fingerprint', 'controllerId']).where('isEdge', '=', 1).execute(),
    // Where each service's dials can end: the routers its terminators are on (what a dial sees).
    onlyServices(db.selectFrom('terminators').select(['serviceId', 'routerId']).distinct(), 'serviceId').execute(),
    // The links routers (ztc's embedded ones included) have between them now.
    db.selectFrom('links').select(['srcRouterId', 'dstRouterId']).execute(),
  ]);

  const policyIds = [...new Set(grants.map((g) => g.policyId as string))];
  const [checks, responseRows] = await Promise.all([
    checksOfPolicies(db, policyIds),
    // Posture responses matter only where some granting policy has checks.
    policyIds.length
      ? onlyIdentities(db.selectFrom('postureResponses').select(['identityId', 'apiSessionId', 'checkId', 'typeId', 'data', 'updatedAt']), 'identityId').execute()
      : Promise.resolve([]),
  ]);

  const enrolled = new Set(authenticated.map((r) => r.identityId as string));
  const withMfa = new Set(mfa.map((r) => r.identityId as string));
  const sessionsOf = new Map<string, Map<string, Responses>>();
  for (const r of responseRows as { identityId: string; apiSessionId: string; checkId: string; typeId: string; data: string; updatedAt: string }[]) {
    const perSession = sessionsOf.get(r.identityId) ?? sessionsOf.set(r.identityId, new Map()).get(r.identityId)!;
    const responses = perSession.get(r.apiSessionId) ?? perSession.set(r.apiSessionId, new Map()).get(r.apiSessionId)!;
    responses.set(r.checkId, { typeId: r.typeId, data: fromJson(r.data, {}), updatedAt: r.updatedAt });
  }
  const identities: IdentityFacts[] = identityRows.map((r) => ({
    id: r.id as string,
    name: r.name as string,
    disabled: !!Number(r.disabled),
    enrolled: enrolled.has(r.id as string),
    hasMfa: withMfa.has(r.id as string),
    loginNeedsTotp: !!fromJson<{ requireTotp?: boolean }>(r.secondaryJson as string | null, {}).requireTotp,
    sessions: [...(sessionsOf.get(r.id as string)?.values() ?? [])],
  }));

  const grantsOf = new Map<string, { policyId: string; kind: string; policyName: string }[]>();
  for (const g of grants) {
    const key = `${g.identityId}\n${g.serviceId}`;
    (grantsOf.get(key) ?? grantsOf.set(key, []).get(key)!).push({ policyId: g.policyId as string, kind: g.kind as string, policyName: g.policyName as string });
  }
  const routersOfIdentity = groupPairs(identityRouters as { a: string; b: string }[]);
  const routersOfService = groupPairs(serviceRouters as { a: string; b: string }[]);
  const routerById = new Map(routers.map((r) => [r.id as string, r]));
  const terminatorRoutersOf = groupPairs((terminatorRows as { serviceId: string; routerId: string }[]).map((t) => ({ a: t.serviceId, b: t.routerId })));
  // A dial reaches the routers a chain of links joins to its own. An embedded router (of a ztc
  // controller) links only when upstream routers dial it: without a link it reaches its own terminators
  // alone. Between upstream routers the links are theirs to make (they link as they come up): taken as made.
  const embedded = (id: string) => !!routerById.get(id)?.controllerId;
  const group = new Map<string, string>();
  const root = (id: string): string => {
    let r = id;
    while (group.has(r) && group.get(r) !== r) r = group.get(r)!;
    return r;
  };
  for (const l of linkRows) group.set(root(l.srcRouterId), root(l.dstRouterId));
  const reaches = (from: string, to: string) => from === to || root(from) === root(to) || (!embedded(from) && !embedded(to));

  const out: PairAdvice[] = [];
  for (const identity of identities) {
    for (const s of serviceRows) {
      const serviceId = s.id as string;
      const mine = routersOfIdentity.get(identity.id) ?? new Set<string>();
      const theirs = routersOfService.get(serviceId) ?? new Set<string>();
      const common = [...mine].filter((id) => theirs.has(id) && routerById.has(id)).map((id) => {
        const r = routerById.get(id)!;
        return { id, name: r.name as string, usable: !!Number(r.isVerified) && !Number(r.disabled) && !!r.fingerprint };
      });
      common.sort((a, b) => a.name.localeCompare(b.name));

      const shared: Reason[] = [];
      if (identity.disabled) shared.push({ code: 'IDENTITY_DISABLED', message: `identity '${identity.name}' is disabled` });
      if (!identity.enrolled) shared.push({ code: 'IDENTITY_NOT_ENROLLED', message: `identity '${identity.name}' has not enrolled (no authenticator)` });
      if (identity.loginNeedsTotp && !identity.hasMfa) shared.push({ code: 'MFA_MISSING', message: `its auth policy requires TOTP and identity '${identity.name}' has not enrolled MFA` });
      if (!mine.size) shared.push({ code: 'NO_EDGE_ROUTER_POLICY', message: `no edge router policy gives identity '${identity.name}' an edge router` });
      if (!theirs.size) shared.push({ code: 'NO_SERVICE_EDGE_ROUTER_POLICY', message: `no service edge router policy gives service '${s.name}' an edge router` });
      if (mine.size && theirs.size && !common.length) shared.push({ code: 'NO_COMMON_ROUTER', message: 'the identity\'s edge routers and the service\'s have none in common' });
      if (common.length && !common.some((r) => r.usable)) shared.push({ code: 'ROUTER_NOT_READY', message: `no common edge router is enrolled, verified and enabled (${common.map((r) => r.name).join(', ')})` });

      const pairGrants = grantsOf.get(`${identity.id}\n${serviceId}`) ?? [];
      const action = (kind: 'dial' | 'bind'): ActionAdvice => {
        const granting = pairGrants.filter((g) => g.kind === kind);
        const reasons = [...shared];
        if (!granting.length) reasons.push({ code: 'NO_SERVICE_POLICY', message: `no ${kind === 'dial' ? 'Dial' : 'Bind'} service policy names both` });
        else for (const r of postureReasons(identity, granting.map((g) => checks.get(g.policyId) ?? []), now)) if (!reasons.some((x) => x.code === r.code)) reasons.push(r);
        // What a dial sees: the service is hosted, but on no router one of the usable common routers reaches.
        const hosts = [...(terminatorRoutersOf.get(serviceId) ?? [])];
        const entries = common.filter((r) => r.usable).map((r) => r.id);
        if (kind === 'dial' && hosts.length && entries.length && !entries.some((from) => hosts.some((to) => reaches(from, to)))) {
          const names = (ids: string[]) => ids.map((id) => `'${(routerById.get(id)?.name as string) ?? id}'`).join(', ');
          reasons.push({
            code: 'NO_REACHABLE_TERMINATOR',
            message: `service '${s.name}' is hosted on router(s) ${names(hosts)}, which the identity's router(s) for it (${names(entries)}) cannot reach: no chain of links joins them (ztc's embedded router links when upstream routers dial it: see ztc fabric links)`,
          });
        }
        const policies = [...new Map(granting.map((g) => [g.policyId, { id: g.policyId, name: g.policyName }])).values()].sort((a, b) => a.name.localeCompare(b.name));
        return { allowed: !reasons.length, policies, reasons };
      };
      out.push({ identity: { id: identity.id, name: identity.name }, service: { id: serviceId, name: s.name as string }, dial: action('dial'), bind: action('bind'), edgeRouters: common });
    }
  }
  return out;
}

/** (entity, edge router) pairs the entity reaches through policies of one kind. */
function reach(db: AnyDb, side: 'identity' | 'service', kind: PolicyKind) {
  return db
    .selectFrom('policyMembers as f')
    .innerJoin('policyMembers as t', (j) => j.onRef('t.policyId', '=', 'f.policyId').on('t.side', '=', 'edge-router'))
    .select(['f.entityId as a', 't.entityId as b'])
    .distinct()
    .where('f.side', '=', side)
    .where('f.kind', '=', kind);
}

/**
 * A grant needs every check of one of its policies passing in one of the identity's API sessions. When
 * none does, the checks of the policy closest to passing are named; MFA checks of an identity that never
 * enrolled MFA say so.
 */
function postureReasons(identity: IdentityFacts, allChecks: Check[][], now: Date): Reason[] {
  // Report-only checks (ziti#2095) deny nothing.
  const policyChecks = allChecks.map((list) => list.filter((c) => !c.reportOnly));
  if (policyChecks.some((list) => !list.length)) return [];
  const sessions = identity.sessions.length ? identity.sessions : [new Map() as Responses];
  let best: Check[] | undefined;
  for (const list of policyChecks) {
    for (const responses of sessions) {
      const failing = list.filter((c) => !evaluateCheck(c, responses, now).isPassing);
      if (!failing.length) return [];
      if (!best || failing.length < best.length) best = failing;
    }
  }
  const reasons: Reason[] = [];
  const names = best!.map((c) => `${c.name} (${c.typeId})`).join(', ');
  if (!identity.sessions.length) reasons.push({ code: 'POSTURE_CHECKS_REQUIRED', message: `posture checks required and not yet reported by any session: ${names}` });
  else reasons.push({ code: 'POSTURE_CHECKS_FAILING', message: `posture checks failing: ${names}` });
  if (best!.some((c) => c.typeId === 'MFA') && !identity.hasMfa) {
    reasons.push({ code: 'MFA_MISSING', message: `an MFA posture check applies and identity '${identity.name}' has not enrolled MFA` });
  }
  return reasons;
}
