// The network model as a document (our extension, for upstream's request #2515): every identity,
// service, config, config type, policy, posture check, CA, auth policy, external JWT signer and
// router, with references by name, without ids or secrets; and the import that makes a controller
// match such a document in one transaction (creates, updates, and deletes with prune), with the
// plan of what it does (or would do, on a dry run).
//
// System entities (built-in config types, the default auth policy, the default admin, routers'
// system edge router policies, the edge routers controllers run themselves) are neither exported nor touched. Not carried: authenticators and
// enrollments (secrets), a CA's verification (it needs the proof again), routers' certificates.
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { Tx } from '../store/db.js';
import { BUILTIN_CONFIG_TYPE_IDS } from './config-schemas.js';
import type { Ctx } from './context.js';
import { createIn, deleteIn, listResource, updateIn, writeTx } from './crud.js';
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

type Item = Record<string, unknown>;

/** Names of the entities of each kind, by id, and back: how references become names and return to ids. */
class Names {
  private byId = new Map<string, Map<string, string>>();
  private byName = new Map<string, Map<string, string>>();
  set(kind: string, id: string, name: string) {
    if (!this.byId.has(kind)) (this.byId.set(kind, new Map()), this.byName.set(kind, new Map()));
    this.byId.get(kind)!.set(id, name);
    this.byName.get(kind)!.set(name, id);
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

interface Kind {
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
const KINDS: Kind[] = [
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
    system: (d) => d.isDefaultAdmin === true,
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
const nameKind = (k: Kind) => k.decl.name;

/** Fields the document carries: the create schema's, less those that only make sense once. */
const SKIPPED = new Set(['enrollment', 'password', 'id']);
const fieldsOf = (k: Kind) => Object.keys((k.decl.schemas.create as { properties?: Item }).properties ?? {}).filter((f) => !SKIPPED.has(f));

async function details(ctx: Ctx, decl: ResourceDecl): Promise<Item[]> {
  const out: Item[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await listResource(ctx, decl, { limit: 500, offset, sort: 'name asc' });
    const items = page.items as Item[];
    out.push(...items);
    if (items.length < 500) return out;
  }
}

/** Every non-system entity of each kind, as details, with the names of everything by id. */
async function current(ctx: Ctx) {
  const names = new Names();
  const all = new Map<string, Item[]>();
  const embedded = await embeddedRouters(ctx);
  for (const k of KINDS) {
    let rows = await details(ctx, k.decl);
    // A controller's own edge router is not part of the model: never planned for update or prune.
    if (k.decl === edgeRouters) rows = rows.filter((r) => !embedded.has(String(r.id)));
    // The transit router list holds every router (as upstream's does): those that are edge routers are exported as such.
    if (k.decl === transitRouters) {
      const edge = new Set((all.get('edgeRouters') ?? []).map((r) => r.id));
      rows = rows.filter((r) => !edge.has(r.id));
    }
    for (const r of rows) names.set(nameKind(k), String(r.id), String(r.name));
    all.set(k.key, rows);
  }
  return { names, all };
}

function toDocItem(k: Kind, detail: Item, names: Names): Item {
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
async function embeddedRouters(ctx: Ctx): Promise<Set<string>> {
  return new Set((await ctx.store.db.selectFrom('routers').select('id').where('controllerId', 'is not', null).execute()).map((r) => r.id));
}

/** Names only (id and name of every entity), for references: small beside the details of 100,000 identities. */
async function allNames(ctx: Ctx): Promise<Names> {
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

export interface PlanStep {
  action: 'create' | 'update' | 'delete';
  kind: string;
  name: string;
  /** For updates: the fields that change, with the value now and the value wanted. */
  changes?: { field: string; from: unknown; to: unknown }[];
}

const ajv = addFormats.default(new Ajv.default({ allErrors: false, strict: false }));
const validators = new Map<Kind, ReturnType<typeof ajv.compile>>();

/** The document's item as the API's create body: names back to ids, checked against the create schema. */
function toBody(k: Kind, item: Item, names: Names, where: string): Item {
  const body: Item = {};
  const fields = fieldsOf(k);
  const docFields = new Map(fields.map((f) => [k.refs?.[f]?.as || f, f]));
  for (const key of Object.keys(item)) {
    if (!docFields.has(key)) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: '${key}' is not a field of ${k.key} (fields: ${[...docFields.keys()].join(', ')})`);
  }
  for (const [docKey, f] of docFields) {
    if (!(docKey in item)) continue;
    const r = k.refs?.[f];
    body[f] = r ? r.toApi(item[docKey], names, where) : item[docKey];
  }
  let validate = validators.get(k);
  if (!validate) validators.set(k, (validate = ajv.compile(k.decl.schemas.create as object)));
  if (!validate(body)) {
    const e = validate.errors?.[0];
    throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: ${e?.instancePath ? `${e.instancePath.slice(1).replace(/\//g, '.')} ` : ''}${e?.message ?? 'is not valid'}`);
  }
  return body;
}

const same = (a: unknown, b: unknown) => JSON.stringify(normalise(a)) === JSON.stringify(normalise(b));
/** Role attributes and policy roles are sets (the API returns them sorted): their order is no change. */
const isSetField = (field: string) => field === 'roleAttributes' || field.endsWith('Roles');
const asSet = (v: unknown) => (Array.isArray(v) ? [...v].sort() : v);
const sameField = (field: string, a: unknown, b: unknown) => (isSetField(field) ? same(asSet(a), asSet(b)) : same(a, b));
function normalise(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalise);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, normalise(x)]));
  return v === undefined ? null : v;
}

/**
 * Make the controller match the document: the plan, and (unless a dry run) its application in one
 * transaction. Without prune, entities the document does not name are left alone.
 */
export async function importModel(ctx: Ctx, doc: unknown, o: { dryRun?: boolean; prune?: boolean }): Promise<{ plan: PlanStep[]; applied: boolean }> {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new ApiError(400, 'COULD_NOT_VALIDATE', 'The document must be an object with a list per kind (what GET /export answers)');
  const d = doc as Record<string, unknown>;
  const known = new Set(['ztcModel', ...KINDS.map((k) => k.key)]);
  const unknown = Object.keys(d).filter((key) => !known.has(key));
  if (unknown.length) throw new ApiError(400, 'COULD_NOT_VALIDATE', `Unknown kind${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `'${u}'`).join(', ')}: the document holds ${KINDS.map((k) => k.key).join(', ')}`);
  if (d.ztcModel !== undefined && d.ztcModel !== 1) throw new ApiError(400, 'COULD_NOT_VALIDATE', `ztcModel ${String(d.ztcModel)} is not a version this controller reads (1)`);

  const { names, all } = await current(ctx);
  const work: { k: Kind; step: PlanStep; where: string; item?: Item; id?: string }[] = [];
  for (const k of KINDS) {
    const raw = d[k.key] ?? [];
    if (!Array.isArray(raw)) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${k.key} must be a list`);
    const existing = new Map((all.get(k.key) ?? []).map((e) => [String(e.name), e]));
    const seen = new Set<string>();
    raw.forEach((item: unknown, i) => {
      let where = `${k.key}[${i}]`;
      if (!item || typeof item !== 'object' || typeof (item as Item).name !== 'string') throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where} must be an object with a name`);
      const name = (item as Item).name as string;
      where += ` '${name}'`;
      if (seen.has(name)) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: '${name}' appears twice in ${k.key}`);
      seen.add(name);
      const there = existing.get(name);
      if (there && k.system?.(there)) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: '${name}' is a system ${k.decl.name}, which import leaves alone: remove it from the document`);
      // Names of what the document creates are known before anything is written (for references).
      if (!there) names.set(nameKind(k), `new:${k.key}:${name}`, name);
      const wanted = item as Item;
      if (!there) {
        work.push({ k, step: { action: 'create', kind: k.key, name }, where, item: wanted });
        return;
      }
      const now = toDocItem(k, there, names);
      const changes = Object.keys(wanted).filter((f) => !sameField(f, now[f], wanted[f])).map((f) => ({ field: f, from: now[f] ?? null, to: wanted[f] }));
      const fixed = changes.find((c) => k.fixed?.includes(c.field));
      if (fixed) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: the ${fixed.field} of ${k.decl.name} '${name}' cannot change (${JSON.stringify(fixed.from)} to ${JSON.stringify(fixed.to)}): delete it, or rename it in the document`);
      if (changes.length) work.push({ k, step: { action: 'update', kind: k.key, name, changes }, where, item: wanted, id: String(there.id) });
    });
    if (o.prune) {
      for (const [name, e] of existing) if (!seen.has(name) && !k.system?.(e)) work.push({ k, step: { action: 'delete', kind: k.key, name }, where: `${k.key} '${name}'`, id: String(e.id) });
    }
  }
  const plan = work.map((w) => w.step);
  if (o.dryRun || !work.length) {
    // Even a dry run checks every item, so that a plan that would fail says so now.
    for (const w of work) if (w.item) toBody(w.k, w.item, names, w.where);
    return { plan, applied: false };
  }

  // Errors of one entity's write name it (a unique name taken by an entity of another kind, say).
  const naming = async (where: string, write: () => Promise<unknown>) => {
    try {
      await write();
    } catch (err) {
      const field = ctx.store.dialect.uniqueViolation(err);
      if (field) throw new ApiError(400, 'COULD_NOT_VALIDATE', `${where}: its ${field} must be unique, and another entity already uses it`);
      if (err instanceof ApiError) throw new ApiError(err.status, err.code, `${where}: ${err.message}`, err.fieldCause, err.extra);
      throw err;
    }
  };
  await writeTx(ctx, async (tx: Tx) => {
    // Deletes first, dependants before what they depend on (the reverse of the creation order).
    for (const w of [...work].reverse()) if (w.step.action === 'delete') await naming(w.where, () => deleteIn(tx, ctx, w.k.decl, w.id!));
    for (const w of work) {
      if (w.step.action === 'delete') continue;
      const where = w.where;
      if (w.step.action === 'create') {
        const body = toBody(w.k, w.item!, names, where);
        await naming(where, async () => names.set(nameKind(w.k), (await createIn(tx, ctx, w.k.decl, body)).id, w.step.name));
      } else {
        // An update restates the whole entity (PUT), from the document's fields over the current ones.
        const current = toDocItem(w.k, (all.get(w.k.key) ?? []).find((e) => e.id === w.id)!, names);
        const body = toBody(w.k, { ...current, ...w.item }, names, where);
        const allowed = (w.k.decl.schemas.update as { properties?: Item } | undefined)?.properties ?? {};
        for (const f of Object.keys(body)) if (!(f in allowed)) delete body[f];
        await naming(where, () => updateIn(tx, ctx, w.k.decl, w.id!, body, 'update'));
      }
    }
  });
  return { plan, applied: true };
}
