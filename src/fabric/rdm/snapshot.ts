// One reading of the router data model, ready for the wire: every entity as the event model routers
// take (rdm/schemas.ts), and each service policy's members by kind. From it, the full DataState in
// upstream's order (ctrl-channel-2.x.md section 2.1: config types, configs, identities, services,
// posture checks, then each policy followed by its services, posture checks and identities, then the
// public keys); and, between two readings, the change set that takes a router from the first to the
// second (what was created, updated, deleted; members added and removed), so a change costs routers
// what changed, not the whole model.
// Each entity's event is encoded once, when it is read: a full state is those bytes one after the other
// (fullState), and an entity is unchanged when its bytes are. After recorded changes, the last reading
// is patched with a partial one (patchSnapshot: the changed identities and policies, the small kinds
// whole) rather than read whole: a Large model's 100,000 identities are read once, not at every change.
import type { RdmPostureCheck, RouterDataModelPart, RouterDataModelSource } from '../../model/router-data-model.js';
import { Encoded, encode } from '../channel/protobuf.js';
import type { PublicKeyModel } from './public-keys.js';
import { Action, RdmSchemas, RelatedType } from './schemas.js';

type Kind = 'configType' | 'config' | 'identity' | 'service' | 'postureCheck' | 'servicePolicy' | 'publicKey' | 'revocation';
/** Creation order; deletions go the other way (a policy before the identities it names). */
const KINDS: Kind[] = ['configType', 'config', 'identity', 'service', 'postureCheck', 'servicePolicy'];
/** After the policies, in upstream's order: the keys (synthetic), then the revocations. */
const LAST = ['publicKey', 'revocation'] as const;
const RELATED: [side: 'services' | 'postureChecks' | 'identities', type: number][] = [['services', RelatedType.Service], ['postureChecks', RelatedType.PostureCheck], ['identities', RelatedType.Identity]];

interface Entry {
  kind: Kind;
  id: string;
  model: Record<string, unknown>;
  /** Its Create event as the wire has it (the full state's bytes): equal bytes, an unchanged entity. */
  bytes: Buffer;
}

export interface Snapshot {
  /** By kind, then id; each kind's entries in id order (identities created since the last full reading last). */
  entries: Map<Kind, Map<string, Entry>>;
  /** `${policyId}|${relatedType}` -> the ids the policy selects of that kind. */
  members: Map<string, Set<string>>;
  /** Policy ids in order, for the full state's policy-then-members runs. */
  policies: string[];
  /** What the reading was made with: the tunnelers' identities, and when an identity's disable ends next (ms). */
  tunnelers?: Map<string, string>;
  nextEnable?: number;
}

/** An event as the codec encodes it (schemas.ts Event). */
export type RdmEvent = Record<string, unknown>;

/** The semver range (blang/semver, as 2.x routers parse it) every version is in. */
export const ANY_VERSION = '>=0.0.0';

/** A posture check's own fields, in the router's model (edge_ctrl.proto DataState.PostureCheck). */
function postureModel(c: RdmPostureCheck): Record<string, unknown> {
  const d = c.data as Record<string, never>;
  const base = { id: c.id, name: c.name, typeId: c.typeId };
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  switch (c.typeId) {
    case 'MAC':
      return { ...base, mac: { macAddresses: list(d.macAddresses) } };
    case 'DOMAIN':
      return { ...base, domains: { domains: list(d.domains) } };
    case 'MFA':
      return { ...base, mfa: { timeoutSeconds: Number(d.timeoutSeconds ?? -1), promptOnWake: !!d.promptOnWake, promptOnUnlock: !!d.promptOnUnlock, ignoreLegacyEndpoints: !!d.ignoreLegacyEndpoints } };
    case 'OS':
      // No versions means any version (as the controllers of ztc and upstream judge it); a 2.0.3 router
      // fails an OS without versions ("none of the given values were in the valid values, valid: []",
      // router/posture/os.go), so it is given the range every version is in.
      return { ...base, osList: { osList: ((d.operatingSystems ?? []) as { type?: string; versions?: string[] }[]).map((o) => ({ osType: String(o.type ?? ''), osVersions: list(o.versions).length ? list(o.versions) : [ANY_VERSION] })) } };
    case 'PROCESS': {
      const p = (d.process ?? {}) as { osType?: string; path?: string; hashes?: string[]; signerFingerprint?: string };
      return { ...base, process: { osType: String(p.osType ?? ''), path: String(p.path ?? ''), hashes: list(p.hashes), fingerprints: p.signerFingerprint ? [p.signerFingerprint] : [] } };
    }
    case 'PROCESS_MULTI':
      return {
        ...base,
        processMulti: {
          semantic: String(d.semantic ?? 'AllOf'),
          processes: ((d.processes ?? []) as { osType?: string; path?: string; hashes?: string[]; signerFingerprints?: string[] }[]).map((p) => ({ osType: String(p.osType ?? ''), path: String(p.path ?? ''), hashes: list(p.hashes), fingerprints: list(p.signerFingerprints) })),
        },
      };
    default:
      return base;
  }
}

/** An ISO time as a google.protobuf.Timestamp. */
function timestamp(at: string): { seconds: bigint; nanos: number } {
  const ms = Date.parse(at);
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
}

/** A full reading's snapshot, with what a partial reading is later checked against. */
export function wholeSnapshot(whole: RouterDataModelPart, keys: PublicKeyModel[]): Snapshot {
  return { ...buildSnapshot(whole.source, keys), tunnelers: whole.tunnelers, nextEnable: whole.nextEnable };
}

export function buildSnapshot(src: RouterDataModelSource, keys: PublicKeyModel[]): Snapshot {
  const entries = new Map<Kind, Map<string, Entry>>();
  const put = (kind: Kind, id: string, model: Record<string, unknown>) => {
    if (!entries.has(kind)) entries.set(kind, new Map());
    entries.get(kind)!.set(id, { kind, id, model, bytes: encode(RdmSchemas.Event, event(kind, Action.Create, model)) });
  };
  for (const k of [...KINDS, ...LAST]) entries.set(k, new Map());
  for (const t of src.configTypes) put('configType', t.id, { ...t });
  for (const c of src.configs) put('config', c.id, { ...c });
  for (const i of src.identities) {
    put('identity', i.id, {
      id: i.id,
      name: i.name,
      defaultHostingPrecedence: i.defaultHostingPrecedence,
      defaultHostingCost: i.defaultHostingCost,
      serviceHostingPrecedences: i.serviceHostingPrecedences,
      serviceHostingCosts: i.serviceHostingCosts,
      appDataJson: Buffer.from(i.appDataJson),
      serviceConfigs: Object.fromEntries(Object.entries(i.serviceConfigs).map(([s, configs]) => [s, { configs }])),
      disabled: i.disabled,
    });
  }
  for (const s of src.services) put('service', s.id, { ...s });
  for (const c of src.postureChecks) put('postureCheck', c.id, postureModel(c));
  const members = new Map<string, Set<string>>();
  for (const p of src.servicePolicies) {
    put('servicePolicy', p.id, { id: p.id, name: p.name, policyType: p.policyType });
    for (const [side, type] of RELATED) members.set(`${p.id}|${type}`, new Set(p[side]));
  }
  for (const k of keys) put('publicKey', k.kid, { ...k });
  for (const r of src.revocations ?? []) put('revocation', r.id, { id: r.id, type: r.type, expiresAt: timestamp(r.expiresAt), ...(r.issuedBefore ? { issuedBefore: timestamp(r.issuedBefore) } : {}) });
  return { entries, members, policies: src.servicePolicies.map((p) => p.id) };
}

const event = (kind: Kind, action: number, model: Record<string, unknown>): RdmEvent => ({ action, [kind]: model, ...(kind === 'publicKey' ? { isSynthetic: true } : {}) });
const membersEvent = (policyId: string, type: number, ids: string[], add: boolean): RdmEvent => ({ action: Action.Create, servicePolicyChange: { policyId, relatedEntityIds: ids, relatedEntityType: type, add } });

/**
 * A reading patched with a partial one (model/router-data-model.ts RouterDataModelPart): the small
 * kinds, the policies and their services and posture checks as the part has them; the identities as
 * before but those the part names (changed, created or gone); each policy's identities as before but
 * for the identities named (in or out as the part says) and the policies named (read whole).
 * `before` is consumed: its identities (a hundred thousand on a Large model) are not copied but become
 * the patched reading's, and `touched` keeps what `before` had of those named, so comparing the two
 * (changes) looks at those only. Unchanged member sets are before's own objects (changes skips them).
 * Undefined, and `before` untouched, when the part cannot patch it: the tunnelers' identities changed, or
 * a policy is new to `before` without being named (its identities were not read); the whole model is
 * read then.
 */
export function patchSnapshot(before: Snapshot, part: RouterDataModelPart, keys: PublicKeyModel[]): { next: Snapshot; touched: Touched } | undefined {
  if (!sameMap(before.tunnelers, part.tunnelers)) return undefined;
  const beforePolicies = before.entries.get('servicePolicy')!;
  if (part.source.servicePolicies.some((p) => !beforePolicies.has(p.id) && !part.policyIds.has(p.id))) return undefined;
  const next = buildSnapshot(part.source, keys);
  // The identities: before's, with those named replaced (in place, keeping the full state's order), added (last) or removed.
  const read = next.entries.get('identity')!;
  const identities = before.entries.get('identity')!;
  const touched: Touched = new Map();
  for (const id of part.identityIds) {
    if (touched.has(id)) continue;
    const was = identities.get(id);
    touched.set(id, was);
    const now = read.get(id);
    if (!now) identities.delete(id);
    else if (!was || !was.bytes.equals(now.bytes)) identities.set(id, now);
  }
  next.entries.set('identity', identities);
  // Each policy's identities: read whole for the policies named; before's, moved for the identities named.
  for (const id of next.policies) {
    if (part.policyIds.has(id)) continue;
    const key = `${id}|${RelatedType.Identity}`;
    const was = before.members.get(key) ?? new Set<string>();
    let now = was;
    for (const identity of touched.keys()) {
      const member = !!part.identityPolicies.get(identity)?.has(id);
      if (member === now.has(identity)) continue;
      if (now === was) now = new Set(was);
      if (member) now.add(identity);
      else now.delete(identity);
    }
    next.members.set(key, now);
  }
  next.tunnelers = part.tunnelers;
  next.nextEnable = Math.min(before.nextEnable ?? Infinity, part.nextEnable);
  return { next, touched };
}

/** The identities a patch named, each with what the reading before it had (undefined: none). */
export type Touched = Map<string, Entry | undefined>;

function sameMap(a: Map<string, string> | undefined, b: Map<string, string>): boolean {
  if (!a || a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/**
 * The DataState body: every entity's encoded event in the full state's order (fullEvents), with the
 * index and the timeline; built once per index and sent to every router that needs it.
 */
export function fullState(s: Snapshot, endIndex: bigint, timelineId: string): Buffer {
  const out: Encoded[] = [];
  for (const kind of KINDS.slice(0, 5)) for (const e of s.entries.get(kind)!.values()) out.push(new Encoded(e.bytes));
  for (const id of s.policies) {
    out.push(new Encoded(s.entries.get('servicePolicy')!.get(id)!.bytes));
    for (const [, type] of RELATED) {
      const ids = [...(s.members.get(`${id}|${type}`) ?? [])];
      if (ids.length) out.push(new Encoded(encode(RdmSchemas.Event, membersEvent(id, type, ids, true))));
    }
  }
  for (const kind of LAST) for (const e of s.entries.get(kind)!.values()) out.push(new Encoded(e.bytes));
  return encode(RdmSchemas.DataState, { events: out, endIndex, timelineId });
}

/** The public keys' events (synthetic), in the full state's order. */
export function keyEvents(s: Snapshot): RdmEvent[] {
  return [...s.entries.get('publicKey')!.values()].map((e) => event('publicKey', Action.Create, e.model));
}

/** The whole model as a DataState's events, in upstream's order. */
export function fullEvents(s: Snapshot): RdmEvent[] {
  const out: RdmEvent[] = [];
  for (const kind of KINDS.slice(0, 5)) for (const e of s.entries.get(kind)!.values()) out.push(event(kind, Action.Create, e.model));
  for (const id of s.policies) {
    out.push(event('servicePolicy', Action.Create, s.entries.get('servicePolicy')!.get(id)!.model));
    for (const [, type] of RELATED) {
      const ids = [...(s.members.get(`${id}|${type}`) ?? [])];
      if (ids.length) out.push(membersEvent(id, type, ids, true));
    }
  }
  for (const kind of LAST) for (const e of s.entries.get(kind)!.values()) out.push(event(kind, Action.Create, e.model));
  return out;
}

/**
 * What takes a router holding `before` to `after`: creates and updates, members removed then added,
 * deletes. After a patch (patchSnapshot), `touched` names the identities that may differ and what
 * `before` had of them (the two readings share the rest): only those are compared.
 */
export function changes(before: Snapshot, after: Snapshot, touched?: Touched): RdmEvent[] {
  const out: RdmEvent[] = [];
  for (const kind of [...KINDS, ...LAST]) {
    if (kind === 'identity' && touched) {
      const now = after.entries.get(kind)!;
      for (const [id, old] of touched) {
        const e = now.get(id);
        if (!e || old === e) continue;
        if (!old) out.push(event(kind, Action.Create, e.model));
        else if (!old.bytes.equals(e.bytes)) out.push(event(kind, Action.Update, e.model));
      }
      continue;
    }
    const was = before.entries.get(kind)!;
    for (const e of after.entries.get(kind)!.values()) {
      const old = was.get(e.id);
      if (old === e) continue;
      if (!old) out.push(event(kind, Action.Create, e.model));
      else if (!old.bytes.equals(e.bytes)) out.push(event(kind, Action.Update, e.model));
    }
  }
  const removed: RdmEvent[] = [];
  const added: RdmEvent[] = [];
  for (const [key, now] of after.members) {
    const [policyId, type] = [key.slice(0, key.lastIndexOf('|')), Number(key.slice(key.lastIndexOf('|') + 1))];
    const was = before.members.get(key) ?? new Set<string>();
    if (was === now) continue;
    const gone = [...was].filter((id) => !now.has(id));
    const fresh = [...now].filter((id) => !was.has(id));
    if (gone.length) removed.push(membersEvent(policyId, type, gone, false));
    if (fresh.length) added.push(membersEvent(policyId, type, fresh, true));
  }
  out.push(...removed, ...added);
  for (const kind of [...[...KINDS].reverse(), ...LAST]) {
    const now = after.entries.get(kind)!;
    if (kind === 'identity' && touched) {
      for (const [id, old] of touched) if (old && !now.has(id)) out.push(event(kind, Action.Delete, old.model));
      continue;
    }
    for (const e of before.entries.get(kind)!.values()) if (!now.has(e.id)) out.push(event(kind, Action.Delete, e.model));
  }
  return out;
}
