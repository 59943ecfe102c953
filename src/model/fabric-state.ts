// The fabric's live state in the store (links, circuits, routers' link listeners), written by the data
// plane as it changes and read by the Fabric API (/fabric/v1) and `ztc fabric`. Rows name the controller
// that wrote them: a controller's rows are its routers' and go when it restarts (they died with it).
import { sql } from 'kysely';
import { iso } from './clock.js';
import type { Ctx } from './context.js';

export interface LinkRecord {
  id: string;
  srcRouterId: string;
  dstRouterId: string;
  protocol: string;
  dialAddress: string;
  iteration: number;
  staticCost: number;
}

export interface CircuitRecord {
  id: string;
  serviceId: string;
  clientId: string;
  hostId: string;
  terminatorId: string;
  routerIds: string[];
  linkIds: string[];
  /** The dialing service session (not stored with the circuit: its events name it, and what granted it). */
  sessionId?: string;
}

/** At start: what a previous run of this controller left (its routers' links and circuits ended with it). */
export async function clearFabricState(ctx: Ctx, controllerId: string) {
  await ctx.store.db.deleteFrom('links').where('controllerId', '=', controllerId).execute();
  await ctx.store.db.deleteFrom('circuits').where('controllerId', '=', controllerId).execute();
}

export async function putLink(ctx: Ctx, controllerId: string, l: LinkRecord) {
  const now = iso(ctx.clock.now());
  await ctx.store.write(async (tx) => {
    await tx.deleteFrom('links').where('id', '=', l.id).execute();
    await tx.insertInto('links').values({ ...l, cost: l.staticCost, srcLatency: 0, dstLatency: 0, createdAt: now, updatedAt: now, tags: '{}', controllerId }).execute();
  });
}

/**
 * One end's measured latency over a link (ns), and the cost it makes with the other end's: computed in
 * the update itself, so two ends reporting at once (two connections on PostgreSQL) cannot undo each other.
 */
export async function setLinkLatency(ctx: Ctx, id: string, end: 'src' | 'dst', ns: number) {
  const ms = Math.floor(ns / 1e6);
  const cost = end === 'src' ? sql<number>`static_cost + ${ms} + dst_latency / 1000000` : sql<number>`static_cost + src_latency / 1000000 + ${ms}`;
  const latency = end === 'src' ? { srcLatency: Math.round(ns) } : { dstLatency: Math.round(ns) };
  await ctx.store.db.updateTable('links').set({ ...latency, cost, updatedAt: iso(ctx.clock.now()) }).where('id', '=', id).execute();
}

/** Which of these links have a row (several controllers on one database: RouterNetwork.keepLinkRows). */
export async function storedLinkIds(ctx: Ctx, ids: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (let i = 0; i < ids.length; i += 500) for (const r of await ctx.store.db.selectFrom('links').select('id').where('id', 'in', ids.slice(i, i + 500)).execute()) out.add(r.id);
  return out;
}

export async function removeLinks(ctx: Ctx, ids: string[]) {
  for (let i = 0; i < ids.length; i += 500) await ctx.store.db.deleteFrom('links').where('id', 'in', ids.slice(i, i + 500)).execute();
}

/** Circuits made and ended since the last call, in one transaction (the recorder batches them). */
export async function recordCircuits(ctx: Ctx, controllerId: string, added: CircuitRecord[], updated: CircuitRecord[], removed: string[]) {
  const now = iso(ctx.clock.now());
  await ctx.store.write(async (tx) => {
    for (let i = 0; i < removed.length; i += 500) await tx.deleteFrom('circuits').where('id', 'in', removed.slice(i, i + 500)).execute();
    const rows = added.map(({ sessionId: _, ...c }) => ({ ...c, routerIds: JSON.stringify(c.routerIds), linkIds: JSON.stringify(c.linkIds), createdAt: now, updatedAt: now, tags: '{}', controllerId }));
    for (let i = 0; i < rows.length; i += 100) await tx.insertInto('circuits').values(rows.slice(i, i + 100)).execute();
    for (const c of updated) await tx.updateTable('circuits').set({ routerIds: JSON.stringify(c.routerIds), linkIds: JSON.stringify(c.linkIds), updatedAt: now }).where('id', '=', c.id).execute();
  });
}

/** What a router's hello announced: its link listeners (the Fabric API's listener addresses) and its build. */
export async function setRouterHello(ctx: Ctx, routerId: string, listeners: { address: string; protocol: string }[], versionInfo: string, capabilitiesMask?: bigint | null) {
  // The capability mask (header 1002) when the caller read one: edge routers show it (capabilities, capabilitiesMask).
  const mask = capabilitiesMask === undefined ? {} : { capabilitiesMask: capabilitiesMask === null ? null : BigInt.asIntN(64, capabilitiesMask).toString() };
  await ctx.store.db.updateTable('routers').set({ linkListeners: JSON.stringify(listeners), versionInfo: versionInfo.slice(0, 512), ...mask }).where('id', '=', routerId).execute();
}

export interface RouterCosts {
  cost: number;
  noTraversal: boolean;
}

/** What path finding needs of routers: their cost and whether they carry others' traffic. */
export async function routerCosts(ctx: Ctx, ids: string[]): Promise<Map<string, RouterCosts>> {
  const out = new Map<string, RouterCosts>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await ctx.store.db.selectFrom('routers').select(['id', 'cost', 'noTraversal']).where('id', 'in', ids.slice(i, i + 500)).execute();
    for (const r of rows) out.set(r.id, { cost: Number(r.cost), noTraversal: !!Number(r.noTraversal) });
  }
  return out;
}

/** Of these routers, those that still exist, are enrolled and not disabled: who may stay connected. */
export async function routersAllowed(ctx: Ctx, ids: string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await ctx.store.db.selectFrom('routers').select(['id', 'disabled', 'isVerified']).where('id', 'in', ids.slice(i, i + 500)).execute();
    for (const r of rows) if (!Number(r.disabled) && Number(r.isVerified)) out.add(r.id);
  }
  return out;
}

/** The fingerprint a router enrolled with, for VerifyRouter (a link's listening side asks who dialed it). */
export async function routerFingerprint(ctx: Ctx, routerId: string): Promise<string | null> {
  const r = await ctx.store.db.selectFrom('routers').select('fingerprint').where('id', '=', routerId).executeTakeFirst();
  return r?.fingerprint?.toLowerCase() ?? null;
}
