// The network model as a document (our extension, for upstream's request #2515): every identity,
// service, config, config type, policy, posture check, CA, auth policy, external JWT signer and
// router, with references by name, without ids or secrets; and the import that makes a controller
// match such a document in one transaction (import-model.ts).
//
// System entities (built-in config types, the default auth policy, the default admin, routers'
// system edge router policies, the edge routers controllers run themselves) are neither exported nor touched. Not carried: authenticators and
// enrollments (secrets), a CA's verification (it needs the proof again), routers' certificates.
import { BUILTIN_CONFIG_TYPE_IDS } from './config-schemas.js';
import type { Ctx } from './context.js';
import { listResource } from './crud.js';
import { ApiError } from './errors.js';
import { authPolicies } from './resources/auth-policies.js';
import { cas } from './resources/cas.js';
import { configs, configTypes } from './resources/configs.js';
import { externalJwtSigners } from './resources/external-jwt-signers.js';
import { identities } from './resources/identities.js';
import { edgeRouterPolicies, serviceEdgeRouterPolicies, servicePolicies } from './resources/policies.js';
import { postureChecks } from './resources/posture-checks.js';
import { edgeRouters, transitRouters } from './resources/routers.js';
import { services } from './resources/services.js';
import type { ResourceDecl } from './resource.js';

export type Item = Record<string, unknown>;

/** Names of the entities of each kind, by id, and back: how references become names and return to ids. */
export class Names {
  private byId = new Map<string, Map<string, string>>();
  private byName = new Map<string, Map<string, string>>();
  set(kind: string, id: string, name: string) {
    if (!this.byId.has(kind)) (this.byId.set(kind, new Map()), this.byName.set(kind, new Map()));
    this.byId.get(kind)!.set(id, name);
    this.byName.get(kind)!.set(name, id);
  }
  has(kind: string, name: string): boolean {
    return this.byName.get(kind)?.has(name) ?? false;
  }
  name(kind: string, id: unknown): unknown {
    return typeof id === 'string' ? (this.byId.get(kind)?.get(id) ?? id) : id;
  }
  id(kind: string, name: unknown, where: string): string {
    const id = typeof name === 'string' ? this.byName.get(kind)?.get(name) : undefined;
    if (!id) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: no ${kind} is named '${String(name)}' (in the document or the controller)`);
    return id;
  }
}

/** `@id` roles as `@name`, and back; `#attribute` and `#all` stay. */
const rolesToNames = (names: Names, kind: string, roles: unknown) => (Array.isArray(roles) ? roles.map((r) => (typeof r === 'string' && r.startsWith('@') ? `@${names.name(kind, r.slice(1))}` : r)) : roles);

export interface Kind {
  /** The document's key. */
  key: string;
  decl: ResourceDecl;
  /** Entities the controller makes and owns: never exported, updated or deleted. */
  system?: (detail: Item) => boolean;
  /** Detail fields under another name in the document, with how the value turns into names and back. */
  refs?: Record<string, { as: string; toDoc: (v: unknown, n: Names) => unknown; toApi: (v: unknown, n: Names, where: string) => unknown }>;
  /** Document fields an update cannot change (the entity must be deleted and created again). */
  fixed?: string[];
}

const ref = (kind: string, as: string) => ({ as, toDoc: (v: unknown, n: Names) => n.name(kind, v), toApi: (v: unknown, n: Names, where: string) => (v === null || v === undefined ? v : n.id(kind, v, where)) });
const roles = (kind: string) => ({ as: '', toDoc: (v: unknown, n: Names) => rolesToNames(n, kind, v), toApi: (v: unknown) => v /* @name is accepted by the API */ });
const keyedByService = (as: string) => ({
  as,
  toDoc: (v: unknown, n: Names) => (v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [String(n.name('service', k)), x])) : v),
  toApi: (v: unknown, n: Names, where: string) => (v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [n.id('service', k, where), x])) : v),
});

/** In the order they are created: each kind refers only to kinds before it. */
export const KINDS: Kind[] = [
  { key: 'configTypes', decl: configTypes, system: (d) => String(d.name) in BUILTIN_CONFIG_TYPE_IDS },
  { key: 'configs', decl: configs, refs: { configTypeId: ref('config type', 'configType') }, fixed: ['configType'] },
  // A service's configs are a set (one per type), kept in no order: sorted by name, so the file is stable.
  { key: 'services', decl: services, refs: { configs: { as: '', toDoc: (v, n) => (Array.isArray(v) ? v.map((id) => String(n.name('config', id))).sort() : v), toApi: (v) => v /* names are accepted */ } } },
  { key: 'postureChecks', decl: postureChecks, fixed: ['typeId'] },
  { key: 'externalJwtSigners', decl: externalJwtSigners },
  {
    key: 'authPolicies',
    decl: authPolicies,
    system: (d) => d.isSystem === true || d.id === 'default',
    refs: {
      primary: {
        as: '',
        toDoc: (v, n) => mapSigners(v, (s) => n.name('external jwt signer', s)),
        toApi: (v, n, where) => mapSigners(v, (s) => n.id('external jwt signer', s, where)),
      },
    },
  },
  { key: 'cas', decl: cas },
  {
    key: 'identities',
    decl: identities,
    // A Router identity comes and goes with its tunneler-enabled edge router (router-identities.ts).
    system: (d) => d.isDefaultAdmin === true || d.typeId === 'Router',
    refs: { authPolicyId: ref('auth policy', 'authPolicy'), serviceHostingCosts: keyedByService(''), serviceHostingPrecedences: keyedByService('') },
  },
  { key: 'edgeRouters', decl: edgeRouters },
  { key: 'transitRouters', decl: transitRouters },
  { key: 'edgeRouterPolicies', decl: edgeRouterPolicies, system: (d) => d.isSystem === true, refs: { identityRoles: roles('identity'), edgeRouterRoles: roles('edge router') } },
  { key: 'serviceEdgeRouterPolicies', decl: serviceEdgeRouterPolicies, refs: { serviceRoles: roles('service'), edgeRouterRoles: roles('edge router') } },
  { key: 'servicePolicies', decl: servicePolicies, refs: { identityRoles: roles('identity'), serviceRoles: roles('service'), postureCheckRoles: roles('posture check') } },
];

function mapSigners(primary: unknown, f: (s: string) => unknown): unknown {
  const p = primary as { extJwt?: { allowedSigners?: string[] | null } } | null;
  if (!p?.extJwt?.allowedSigners) return primary;
  return { ...p, extJwt: { ...p.extJwt, allowedSigners: p.extJwt.allowedSigners.map(f) } };
}

/** The kind a role or reference names, as Names keys it: the declaration's singular name. */
export const nameKind = (k: Kind) => k.decl.name;

/** Fields the document carries: the create schema's, less those that only make sense once. */
const SKIPPED = new Set(['enrollment', 'password', 'id']);
export const fieldsOf = (k: Kind) => Object.keys((k.decl.schemas.create as { properties?: Item }).properties ?? {}).filter((f) => !SKIPPED.has(f));

export function toDocItem(k: Kind, detail: Item, names: Names): Item {
  const out: Item = {};
  for (const f of fieldsOf(k)) {
    const r = k.refs?.[f];
    const value = f === 'type' && k.decl === identities ? detail.typeId : detail[f];
    if (value === undefined) continue;
    out[r?.as || f] = r ? r.toDoc(value, names) : value;
  }
  return out;
}

/** The edge routers controllers run themselves (fabric/): each belongs to its controller, not to the model. */
export async function embeddedRouters(ctx: Ctx): Promise<Set<string>> {
  return new Set((await ctx.store.db.selectFrom('routers').select('id').where('controllerId', 'is not', null).execute()).map((r) => r.id));
}

/** Names only (id and name of every entity), for references: small beside the details of 100,000 identities. */
export async function allNames(ctx: Ctx): Promise<Names> {
  const names = new Names();
  for (const k of KINDS) {
    const rows = await ctx.store.db.selectFrom(k.decl.table as 'identities').select(['id', 'name']).execute();
    for (const r of rows as { id: string; name: string }[]) names.set(nameKind(k), r.id, r.name);
  }
  return names;
}

/**
 * The document a page of 500 entities at a time, in name order, as document items per kind: what
 * GET /export writes as it reads, so memory stays bounded however large the model. Each kind starts
 * with a marker carrying how many entities it holds (so an empty kind still appears, as an empty list).
 */
export async function* exportItems(ctx: Ctx): AsyncGenerator<{ kind: string; total: number } | { kind: string; item: Item }> {
  const names = await allNames(ctx);
  const edge = new Set((await ctx.store.db.selectFrom('routers').select('id').where('isEdge', '=', 1).execute()).map((r) => r.id));
  const embedded = await embeddedRouters(ctx);
  for (const k of KINDS) {
    for (let offset = 0; ; offset += 500) {
      const listed = await listResource(ctx, k.decl, { limit: 500, offset, sort: 'name asc' });
      if (offset === 0) yield { kind: k.key, total: listed.pagination.totalCount };
      const page = listed.items as Item[];
      for (const d of page) {
        // The transit router list holds every router (as upstream's does): edge routers are exported as such.
        if (k.system?.(d) || (k.decl === transitRouters && edge.has(String(d.id))) || embedded.has(String(d.id))) continue;
        yield { kind: k.key, item: toDocItem(k, d, names) };
      }
      if (page.length < 500) break;
    }
  }
}

