// What 2.x routers are told of the network: the router data model's contents (../shared/reference/
// ctrl-channel-2.x.md section 2.1) as plain data, read from the same tables the APIs write: config types
// and configs, identities (with their hosting costs and precedences and per-service configs), services,
// service policies with the services, identities and posture checks they select (policy_members), posture
// checks, the certificates routers trust (verified third-party CAs, the controllers'), and the revocations
// (model/auth/revocations.ts) routers enforce on the SDKs' access tokens. fabric/rdm/
// turns this into the DataState and the change sets routers receive; nothing here knows the wire.
import { fromJson, isSet } from '../store/json.js';
import { SPENT_REFRESH_TOKEN_TAGS } from './auth/revocations.js';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { MAX_RETIRED_KEY_DAYS } from './pki/pki.js';
import { tunnelerIdentities } from './router-tunneler.js';

export const PRECEDENCE_NUMBER: Record<string, number> = { default: 0, required: 1, failed: 2 };

export interface RdmIdentity {
  id: string;
  name: string;
  defaultHostingPrecedence: number;
  defaultHostingCost: number;
  serviceHostingPrecedences: Record<string, number>;
  serviceHostingCosts: Record<string, number>;
  appDataJson: string;
  /** Per service: config type id -> config id (the identity's own choices, identity_service_configs). */
  serviceConfigs: Record<string, Record<string, string>>;
  disabled: boolean;
}

export interface RdmService {
  id: string;
  name: string;
  encryptionRequired: boolean;
  configs: string[];
}

export interface RdmServicePolicy {
  id: string;
  name: string;
  /** Dial 1, Bind 2 (edge_ctrl_pb.PolicyType). */
  policyType: number;
  services: string[];
  identities: string[];
  postureChecks: string[];
}

export interface RdmPostureCheck {
  id: string;
  name: string;
  typeId: string;
  data: Record<string, unknown>;
}

export interface RdmRevocation {
  id: string;
  /** API_SESSION, IDENTITY or JTI. */
  type: string;
  /** ISO times; issuedBefore only for IDENTITY (tokens it issued before then are revoked). */
  expiresAt: string;
  issuedBefore?: string;
}

export interface RouterDataModelSource {
  configTypes: { id: string; name: string; target: string }[];
  configs: { id: string; typeId: string; name: string; dataJson: string }[];
  identities: RdmIdentity[];
  services: RdmService[];
  servicePolicies: RdmServicePolicy[];
  postureChecks: RdmPostureCheck[];
  /** PEMs: verified third-party CAs (they issue identities' certificates), and every controller's certificate (it signs JWTs). */
  caPems: string[];
  controllerPems: string[];
  /**
   * The replaced server certificates the controllers still publish (model/pki/renewal.ts): their keys
   * may have signed tokens that have not expired (upstream bug #4116), for JWTs only.
   */
  controllerRetiredPems?: string[];
  /** Unexpired revocations, but spent refresh tokens (routers never see refresh tokens). */
  revocations?: RdmRevocation[];
}

const byId = <T extends { id: string }>(a: T, b: T) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The entity kinds whose changes routers hear of (upstream's store names, as entity changes record them). */
export const ROUTER_MODEL_ENTITIES = ['identities', 'services', 'servicePolicies', 'configs', 'configTypes', 'postureChecks', 'cas', 'controllers', 'revocations'];

/**
 * The recorded entity changes (model/events/record.ts: every write records one, in its transaction) of
 * what routers hear of, made after `since` (ISO time): id, time, and which entity, read through the
 * audit table's index on time. The data plane asks this every second (and at once when this
 * controller's API wrote such a change) to know what to read again.
 */
export async function routerModelChanges(ctx: Ctx, since: string): Promise<{ id: string; at: string; entityType: string | null; entityId: string | null }[]> {
  return ctx.store.db
    .selectFrom('auditEvents')
    .select(['id', 'at', 'entityType', 'entityId'])
    .where('at', '>', since)
    .where('namespace', '=', 'entityChange')
    .where('entityType', 'in', ROUTER_MODEL_ENTITIES)
    .limit(CHANGES_READ)
    .execute();
}

/** The most recorded changes one look reads; a look that finds this many reads the whole model again. */
export const CHANGES_READ = 10_000;

/**
 * When the newest recorded change of what routers see was made, by the clock of whoever made it (''
 * when none): where a data plane starts looking, rather than its own clock, which may run ahead of
 * another controller's (or of a test controller's stopped clock) by more than the look-back.
 */
export async function newestRouterModelChange(ctx: Ctx): Promise<string> {
  const row = await ctx.store.db
    .selectFrom('auditEvents')
    .select((eb) => eb.fn.max('at').as('at'))
    .where('namespace', '=', 'entityChange')
    .where('entityType', 'in', ROUTER_MODEL_ENTITIES)
    .executeTakeFirst();
  return (row?.at as string | null | undefined) ?? '';
}

/**
 * A reading of part of the model, after recorded changes of some identities and service policies:
 * everything but the identities read whole (config types, configs, services, posture checks, the
 * policies with their services and posture checks, keys, revocations: each kind a few hundred or
 * thousand rows where identities are a hundred thousand); of the identities only those named, and of
 * the policies' identities only those of the policies named, and the policies the named identities
 * are in. fabric/rdm/snapshot.ts patches its last full reading with it.
 */
export interface RouterDataModelPart {
  /** `identities`: those named that exist; each policy's `identities`: filled for the policies named only. */
  source: RouterDataModelSource;
  /** The identities named, as the model names them (a tunneler's by its router's id). */
  identityIds: string[];
  /** For each identity named (model id): the service policies it is in now. */
  identityPolicies: Map<string, Set<string>>;
  /** The policies whose identities were read. */
  policyIds: Set<string>;
  /** Router id -> its tunneler identity, as read now (a change of these means reading everything again). */
  tunnelers: Map<string, string>;
  /** The earliest time after now at which an identity read (any, in a full reading) stops being disabled (ms, or Infinity). */
  nextEnable: number;
}

/** How many ids one `in (...)` statement names (well under SQLite's and PostgreSQL's parameter limits). */
const IN_CHUNK = 500;
/** The identities of a full reading are read this many at a time, the thread's event loop turning between pages. */
const PAGE = 10_000;
const chunks = <T>(list: T[], n = IN_CHUNK): T[][] => Array.from({ length: Math.ceil(list.length / n) }, (_, i) => list.slice(i * n, (i + 1) * n));
const turn = () => new Promise<void>((r) => setImmediate(r));

/** The whole model, each list sorted by id (so two reads of an unchanged store compare equal). */
export async function readRouterDataModel(ctx: Ctx): Promise<RouterDataModelSource> {
  return (await readModel(ctx)).source;
}

/** The whole model, with what a later partial reading is compared against (the tunnelers, the next enable time). */
export async function readRouterDataModelWhole(ctx: Ctx): Promise<RouterDataModelPart> {
  return readModel(ctx);
}

/** Part of the model (RouterDataModelPart): these identities (store ids) and these service policies. */
export async function readRouterDataModelPart(ctx: Ctx, o: { identities: string[]; policies: string[] }): Promise<RouterDataModelPart> {
  return readModel(ctx, o);
}

async function readModel(ctx: Ctx, part?: { identities: string[]; policies: string[] }): Promise<RouterDataModelPart> {
  const db = ctx.store.db;
  const now = ctx.clock.now().getTime();
  const [configTypes, configs, services, serviceConfigs, policies, checks, cas, controllers, revocations, tunnelers] = await Promise.all([
    db.selectFrom('configTypes').select(['id', 'name', 'target']).execute(),
    // Configs for routers (2.1, a type whose target is router) go only to the routers they are assigned to
    // upstream; ztc assigns none, so none goes (2.1's routers do not consume them yet either).
    db.selectFrom('configs as c').innerJoin('configTypes as t', 't.id', 'c.configTypeId').select(['c.id', 'c.configTypeId', 'c.name', 'c.data']).where('t.target', '<>', 'router').execute(),
    db.selectFrom('services').select(['id', 'name', 'encryptionRequired']).execute(),
    db.selectFrom('serviceConfigs').select(['serviceId', 'configId']).execute(),
    db.selectFrom('servicePolicies').select(['id', 'name', 'type']).execute(),
    db.selectFrom('postureChecks').select(['id', 'name', 'typeId', 'data', 'reportOnly']).execute(),
    db.selectFrom('cas').select(['id', 'certPem']).where('isVerified', '=', 1).execute(),
    db.selectFrom('controllers').select(['id', 'certPem', 'retiredCerts']).execute(),
    db.selectFrom('revocations').select(['id', 'type', 'expiresAt', 'issuedBefore']).where('expiresAt', '>', iso(new Date(now))).where('tags', '!=', SPENT_REFRESH_TOKEN_TAGS).execute(),
    tunnelerIdentities(ctx),
  ]);
  const serviceSideKinds = ['dial', 'bind'] as const;
  const servicePolicyIds = policies.filter((p) => p.type === 'Dial' || p.type === 'Bind').map((p) => p.id);
  // Each service policy's services and posture checks (by the policy: the members' primary key leads with it).
  const members: { policyId: string; side: string; entityId: string }[] = [];
  for (const ids of chunks(servicePolicyIds)) members.push(...(await db.selectFrom('policyMembers').select(['policyId', 'side', 'entityId']).where('policyId', 'in', ids).where('side', 'in', ['service', 'posture-check']).where('kind', 'in', serviceSideKinds).execute()));

  type IdentityRow = { id: string; name: string; defaultHostingPrecedence: string; defaultHostingCost: number; serviceHostingPrecedences: string; serviceHostingCosts: string; appData: string; disabled: unknown; disabledUntil: string | null };
  const identityColumns = ['id', 'name', 'defaultHostingPrecedence', 'defaultHostingCost', 'serviceHostingPrecedences', 'serviceHostingCosts', 'appData', 'disabled', 'disabledUntil'] as const;
  const identities: IdentityRow[] = [];
  const identityConfigs: { identityId: string; serviceId: string; configTypeId: string; configId: string }[] = [];
  const identityMembers: { policyId: string; entityId: string }[] = [];
  const identityConfigColumns = ['identityId', 'serviceId', 'configTypeId', 'configId'] as const;
  if (!part) {
    // Page by page in id order, the thread's loop turning between pages (dials and heartbeats go on).
    for (let after = ''; ; ) {
      const page = (await db.selectFrom('identities').select(identityColumns).where('id', '>', after).orderBy('id').limit(PAGE).execute()) as IdentityRow[];
      identities.push(...page);
      if (page.length < PAGE) break;
      after = page[page.length - 1].id;
      await turn();
    }
    identityConfigs.push(...(await db.selectFrom('identityServiceConfigs').select(identityConfigColumns).execute()));
    await turn();
    for (const ids of chunks(servicePolicyIds, 50)) {
      identityMembers.push(...(await db.selectFrom('policyMembers').select(['policyId', 'entityId']).where('policyId', 'in', ids).where('side', '=', 'identity').where('kind', 'in', serviceSideKinds).execute()));
      await turn();
    }
  } else {
    for (const ids of chunks([...new Set(part.identities)])) {
      identities.push(...((await db.selectFrom('identities').select(identityColumns).where('id', 'in', ids).execute()) as IdentityRow[]));
      identityConfigs.push(...(await db.selectFrom('identityServiceConfigs').select(identityConfigColumns).where('identityId', 'in', ids).execute()));
      // The policies these identities are in (through the members' index by entity).
      identityMembers.push(...(await db.selectFrom('policyMembers').select(['policyId', 'entityId']).where('entityId', 'in', ids).where('side', '=', 'identity').where('kind', 'in', serviceSideKinds).execute()));
    }
    const asked = new Set(part.policies);
    for (const ids of chunks(servicePolicyIds.filter((id) => asked.has(id)))) identityMembers.push(...(await db.selectFrom('policyMembers').select(['policyId', 'entityId']).where('policyId', 'in', ids).where('side', '=', 'identity').where('kind', 'in', serviceSideKinds).execute()));
  }
  // A tunneler-enabled router's Router identity goes by the router's id: a 2.x router's own tunneler looks
  // its identity up in the model by its router id, as upstream gives the two one id (router-tunneler.ts).
  const routerOf = new Map([...tunnelers].map(([routerId, identityId]) => [identityId, routerId]));
  const asInModel = (identityId: string) => routerOf.get(identityId) ?? identityId;

  const perIdentity = new Map<string, Record<string, Record<string, string>>>();
  for (const c of identityConfigs) {
    const m = perIdentity.get(c.identityId) ?? {};
    (m[c.serviceId] ??= {})[c.configTypeId] = c.configId;
    perIdentity.set(c.identityId, m);
  }
  const configsOf = new Map<string, string[]>();
  for (const c of serviceConfigs) configsOf.set(c.serviceId, [...(configsOf.get(c.serviceId) ?? []), c.configId]);
  // A report-only check (ziti#2095) is not a policy's to enforce: 2.x routers, which check posture
  // themselves, are not told a policy has it.
  const reportOnly = new Set(checks.filter((c) => isSet(c.reportOnly)).map((c) => c.id));
  const sides = new Map<string, { service: string[]; identity: string[]; 'posture-check': string[] }>();
  const sideOf = (policyId: string) => {
    let s = sides.get(policyId);
    if (!s) sides.set(policyId, (s = { service: [], identity: [], 'posture-check': [] }));
    return s;
  };
  for (const m of members) {
    if (m.side === 'posture-check' && reportOnly.has(m.entityId)) continue;
    if (m.side === 'service' || m.side === 'posture-check') sideOf(m.policyId)[m.side].push(m.entityId);
  }
  const askedPolicies = new Set(part ? part.policies : servicePolicyIds);
  const identityPolicies = new Map<string, Set<string>>();
  const identityIds = part ? [...new Set(part.identities)].map(asInModel) : [];
  if (part) for (const id of identityIds) identityPolicies.set(id, new Set());
  // Each membership row once: a row can come both as an identity's and as a named policy's.
  const seenMember = new Set<string>();
  for (const m of identityMembers) {
    const key = `${m.policyId}|${m.entityId}`;
    if (part && seenMember.has(key)) continue;
    if (part) seenMember.add(key);
    const id = asInModel(m.entityId);
    if (askedPolicies.has(m.policyId)) sideOf(m.policyId).identity.push(id);
    identityPolicies.get(id)?.add(m.policyId);
  }
  const precedences = (json: string) => Object.fromEntries(Object.entries(fromJson<Record<string, string>>(json, {})).map(([k, v]) => [k, PRECEDENCE_NUMBER[v] ?? 0]));
  let nextEnable = Infinity;
  for (const i of identities) {
    const until = i.disabledUntil ? Date.parse(i.disabledUntil) : NaN;
    if (isSet(i.disabled) && until > now && until < nextEnable) nextEnable = until;
  }

  const source: RouterDataModelSource = {
    configTypes: configTypes.map((t) => ({ id: t.id, name: t.name, target: t.target })).sort(byId),
    configs: configs.map((c) => ({ id: c.id, typeId: c.configTypeId, name: c.name, dataJson: c.data })).sort(byId),
    identities: identities
      .map((i) => ({
        id: asInModel(i.id),
        name: i.name,
        defaultHostingPrecedence: PRECEDENCE_NUMBER[i.defaultHostingPrecedence] ?? 0,
        defaultHostingCost: Number(i.defaultHostingCost) || 0,
        serviceHostingPrecedences: precedences(i.serviceHostingPrecedences),
        serviceHostingCosts: fromJson<Record<string, number>>(i.serviceHostingCosts, {}),
        appDataJson: i.appData || '{}',
        serviceConfigs: perIdentity.get(i.id) ?? {},
        disabled: isSet(i.disabled) && (!i.disabledUntil || Date.parse(i.disabledUntil) > now),
      }))
      .sort(byId),
    services: services.map((s) => ({ id: s.id, name: s.name, encryptionRequired: isSet(s.encryptionRequired), configs: (configsOf.get(s.id) ?? []).sort() })).sort(byId),
    servicePolicies: policies
      .filter((p) => p.type === 'Dial' || p.type === 'Bind')
      .map((p) => {
        const s = sides.get(p.id);
        return { id: p.id, name: p.name, policyType: p.type === 'Dial' ? 1 : 2, services: (s?.service ?? []).sort(), identities: (s?.identity ?? []).sort(), postureChecks: (s?.['posture-check'] ?? []).sort() };
      })
      .sort(byId),
    postureChecks: checks.map((c) => ({ id: c.id, name: c.name, typeId: c.typeId, data: fromJson<Record<string, unknown>>(c.data, {}) })).sort(byId),
    caPems: cas.sort(byId).map((c) => c.certPem),
    controllerPems: controllers.sort(byId).map((c) => c.certPem),
    controllerRetiredPems: controllers
      .flatMap((c) => fromJson<{ certPem?: string; retiredAt?: string }[]>(c.retiredCerts, []))
      .filter((c) => typeof c.certPem === 'string' && Date.parse(String(c.retiredAt)) > now - MAX_RETIRED_KEY_DAYS * 86_400_000)
      .map((c) => c.certPem!),
    revocations: revocations.map((r) => ({ id: r.id, type: r.type, expiresAt: r.expiresAt, ...(r.type === 'IDENTITY' ? { issuedBefore: r.issuedBefore } : {}) })).sort(byId),
  };
  return { source, identityIds, identityPolicies, policyIds: askedPolicies, tunnelers, nextEnable };
}
