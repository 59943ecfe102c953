// Posture responses: what a client reports about its device, kept per API session, and what an
// administrator can read back (an identity's posture data, its failed service requests).
import type { Kysely } from 'kysely';
import { fromJson, isSet } from '../../store/json.js';
import { iso } from '../clock.js';
import type { Ctx, Principal } from '../context.js';
import { writeTx } from '../crud.js';
import { recordRowChange } from '../events/record.js';
import type { Tx } from '../../store/db.js';
import { ApiError, invalidField } from '../errors.js';
import { touchServices } from '../changes.js';
import { ENDPOINT_STATE_KEY, MFA_KEY, storeResponse } from './evaluate.js';
import { cleanHex } from './clean.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export interface PostureResponseInput {
  id: string;
  typeId: string;
  [field: string]: unknown;
}

const need = (r: PostureResponseInput, i: number | undefined, field: string, kind: 'string' | 'array') => {
  const v = r[field];
  const ok = kind === 'string' ? typeof v === 'string' && v.length > 0 : Array.isArray(v) && v.every((x) => typeof x === 'string');
  if (!ok) throw invalidField(i === undefined ? field : `[${i}].${field}`, `is required for ${r.typeId} responses (${kind === 'string' ? 'a non-empty string' : 'a list of strings'})`);
};

/** Store a batch of responses for the caller's API session in one transaction; answers the services whose MFA timers changed. */
export async function submitResponses(ctx: Ctx, who: Principal, list: PostureResponseInput[], bulk: boolean) {
  const at = iso(ctx.clock.now());
  return writeTx(ctx, async (tx) => {
    let woke = false;
    for (const [n, r] of list.entries()) {
      const i = bulk ? n : undefined;
      if (r.typeId === 'ENDPOINT_STATE') {
        const data = { woken: r.woken === true, unlocked: r.unlocked === true };
        woke ||= data.woken || data.unlocked;
        await storeAndRecord(tx, ctx, { apiSessionId: who.apiSessionId, identityId: who.identityId, checkId: ENDPOINT_STATE_KEY, typeId: r.typeId, data, at });
        continue;
      }
      if (r.typeId === 'MFA') throw invalidField(i === undefined ? 'typeId' : `[${i}].typeId`, 'MFA is answered by POST /authenticate/mfa with a code, not by a posture response', r.typeId);
      const check = await tx.selectFrom('postureChecks').select(['id', 'typeId']).where('id', '=', r.id).executeTakeFirst();
      if (!check) throw invalidField(i === undefined ? 'id' : `[${i}].id`, `no posture check has the id '${r.id}': answer the ids of the service's postureQueries`, r.id);
      const typeOk = check.typeId === r.typeId || (check.typeId === 'PROCESS_MULTI' && r.typeId === 'PROCESS');
      if (!typeOk) throw invalidField(i === undefined ? 'typeId' : `[${i}].typeId`, `posture check '${r.id}' is of type ${check.typeId}`, r.typeId);
      let data: Record<string, unknown>;
      switch (r.typeId) {
        case 'DOMAIN':
          need(r, i, 'domain', 'string');
          data = { domain: r.domain };
          break;
        case 'MAC':
          need(r, i, 'macAddresses', 'array');
          // Stored cleaned, as upstream stores them (its posture data shows 'aabbccddeeff').
          data = { macAddresses: (r.macAddresses as unknown[]).map(cleanHex) };
          break;
        case 'OS':
          need(r, i, 'type', 'string');
          need(r, i, 'version', 'string');
          data = { type: r.type, version: r.version, build: typeof r.build === 'string' ? r.build : '' };
          break;
        case 'PROCESS': {
          need(r, i, 'path', 'string');
          // A multi-process check is answered one process at a time: keep each by path.
          const prev = await tx.selectFrom('postureResponses').select('data').where('apiSessionId', '=', who.apiSessionId).where('checkId', '=', r.id).executeTakeFirst();
          const processes = fromJson<Record<string, unknown>>(prev?.data, {}).processes as Record<string, unknown> | undefined;
          const entry = { path: r.path, isRunning: r.isRunning === true, hash: typeof r.hash === 'string' ? cleanHex(r.hash) : '', signerFingerprints: Array.isArray(r.signerFingerprints) ? r.signerFingerprints.map(cleanHex) : [] };
          data = { processes: { ...(processes ?? {}), [String(r.path).trim().toLowerCase()]: entry } };
          break;
        }
        default:
          throw invalidField(i === undefined ? 'typeId' : `[${i}].typeId`, 'must be OS, PROCESS, DOMAIN, MAC or ENDPOINT_STATE', r.typeId);
      }
      await storeAndRecord(tx, ctx, { apiSessionId: who.apiSessionId, identityId: who.identityId, checkId: r.id, typeId: check.typeId, data, at });
    }
    await touchServices(tx, ctx, { grants: false });
    return { services: woke ? await mfaTimedServices(tx, who.identityId) : [] };
  });
}

/**
 * Store one response and record it as an entity change (created, or updated from the response it replaces),
 * in the batch's transaction. Its id is the row's key: the API session and the posture check it answers.
 */
async function storeAndRecord(tx: Tx, ctx: Ctx, r: Parameters<typeof storeResponse>[1]) {
  const before = await tx.selectFrom('postureResponses').selectAll().where('apiSessionId', '=', r.apiSessionId).where('checkId', '=', r.checkId).executeTakeFirst();
  await storeResponse(tx, r);
  const after = { apiSessionId: r.apiSessionId, identityId: r.identityId, checkId: r.checkId, typeId: r.typeId, data: JSON.stringify(r.data), updatedAt: r.at };
  await recordRowChange(tx, ctx, 'postureResponses', before ? 'updated' : 'created', `${r.apiSessionId}.${r.checkId}`, (before as Record<string, unknown> | undefined) ?? null, after);
}

/** Services whose MFA checks ask for MFA again after a wake or unlock: their timers just ran out. */
async function mfaTimedServices(db: AnyDb, identityId: string) {
  const rows = await db
    .selectFrom('policyMembers as i')
    .innerJoin('policyMembers as c', (j) => j.onRef('c.policyId', '=', 'i.policyId').on('c.side', '=', 'posture-check'))
    .innerJoin('postureChecks as pc', 'pc.id', 'c.entityId')
    .innerJoin('policyMembers as s', (j) => j.onRef('s.policyId', '=', 'i.policyId').on('s.side', '=', 'service'))
    .innerJoin('services as sv', 'sv.id', 's.entityId')
    .select(['sv.id', 'sv.name', 'pc.data'])
    .where('i.entityId', '=', identityId)
    .where('i.side', '=', 'identity')
    .where('i.kind', 'in', ['dial', 'bind'])
    .where('pc.typeId', '=', 'MFA')
    .execute();
  const out = new Map<string, { id: string; name: string; postureQueryType: string; timeout: number; timeoutRemaining: number }>();
  for (const r of rows as { id: string; name: string; data: string }[]) {
    const d = fromJson<{ promptOnWake?: boolean; promptOnUnlock?: boolean; timeoutSeconds?: number }>(r.data, {});
    if (d.promptOnWake || d.promptOnUnlock) out.set(r.id, { id: r.id, name: r.name, postureQueryType: 'MFA', timeout: Number(d.timeoutSeconds ?? -1), timeoutRemaining: 0 });
  }
  return [...out.values()];
}

const EPOCH = new Date(0).toISOString();

/** Everything the identity's API sessions reported, newest first per kind (upstream's postureData shape). */
export async function postureDataOf(db: AnyDb, identityId: string) {
  const rows = (await db
    .selectFrom('postureResponses as r')
    .innerJoin('apiSessions as a', 'a.id', 'r.apiSessionId')
    .select(['r.apiSessionId', 'r.checkId', 'r.typeId', 'r.data', 'r.updatedAt', 'a.isMfaComplete'])
    .where('r.identityId', '=', identityId)
    .orderBy('r.updatedAt', 'desc')
    .execute()) as { apiSessionId: string; checkId: string; typeId: string; data: string; updatedAt: string; isMfaComplete: number }[];
  const latest = (type: string) => rows.find((r) => r.typeId === type && !r.checkId.startsWith('#'));
  const base = (r?: { checkId: string; updatedAt: string }) => ({ postureCheckId: r?.checkId ?? '', timedOut: false, lastUpdatedAt: r?.updatedAt ?? EPOCH });
  const mac = latest('MAC');
  const domain = latest('DOMAIN');
  const os = latest('OS');
  const processes = rows
    .filter((r) => r.typeId === 'PROCESS' || r.typeId === 'PROCESS_MULTI')
    .flatMap((r) => Object.values(fromJson<{ processes?: Record<string, { isRunning: boolean; hash: string; signerFingerprints: string[] }> }>(r.data, {}).processes ?? {}).map((p) => ({ ...base(r), isRunning: p.isRunning, binaryHash: p.hash, signerFingerprints: p.signerFingerprints })));
  const sessions: Record<string, unknown> = {};
  for (const r of rows) {
    const s = (sessions[r.apiSessionId] ??= { mfa: { apiSessionId: r.apiSessionId, passedMfa: isSet(r.isMfaComplete), passedOnWake: false, passedOnUnlock: false, passedAt: EPOCH } }) as { mfa: Record<string, unknown>; endpointState?: unknown };
    if (r.checkId === MFA_KEY) s.mfa.passedAt = r.updatedAt;
    if (r.checkId === ENDPOINT_STATE_KEY) s.endpointState = fromJson(r.data, {});
  }
  return {
    mac: { ...base(mac), addresses: fromJson<{ macAddresses?: string[] }>(mac?.data, {}).macAddresses ?? [] },
    domain: { ...base(domain), domain: fromJson<{ domain?: string }>(domain?.data, {}).domain ?? '' },
    os: { ...base(os), ...{ type: '', version: '', build: '' }, ...fromJson<Record<string, string>>(os?.data, {}) },
    processes,
    apiSessionPostureData: sessions,
  };
}

export async function failedRequestsOf(db: AnyDb, identityId: string) {
  type FailedRow = { apiSessionId: string; serviceId: string; serviceName: string; sessionType: string; at: string; policyFailures: string; reportOnly: unknown };
  const rows = (await db.selectFrom('failedServiceRequests').selectAll().where('identityId', '=', identityId).orderBy('at', 'desc').orderBy('id', 'desc').execute()) as FailedRow[];
  return rows.map((r: FailedRow) => ({
    apiSessionId: r.apiSessionId, serviceId: r.serviceId, serviceName: r.serviceName, sessionType: r.sessionType, when: r.at, policyFailures: fromJson(r.policyFailures, []),
    // ztc's addition: granted all the same, only report-only checks (ziti#2095) having failed.
    ...(isSet(r.reportOnly) ? { reportOnly: true } : {}),
  }));
}

export const assertSession = (who: Principal) => {
  if (!who.apiSessionId) throw new ApiError(400, 'NO_API_SESSION', 'Posture responses belong to an API session: authenticate first (the local administrator has none)');
};
