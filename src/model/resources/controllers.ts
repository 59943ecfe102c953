// The controllers serving this database: each registers itself when it starts serving and keeps a
// heartbeat, so with several controllers on one PostgreSQL database each one lists all of them.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Type } from 'typebox';
import { fromJson } from '../../store/json.js';
import { iso } from '../clock.js';
import { advertisedApiUrl } from '../../config.js';
import type { Ctx } from '../context.js';
import type { Db } from '../../store/db.js';
import { sql } from 'kysely';
import { baseDetail, baseFilterable, defineResource } from '../resource.js';
import { baseFields, MapOf } from '../schemas/common.js';

export const HEARTBEAT_MS = 30_000;
const ONLINE_WITHIN_MS = 3 * HEARTBEAT_MS;

const ApiAddress = Type.Object({ url: Type.String(), version: Type.String() });

/**
 * The control channel's address of a controller (`tls:host:port`, what routers put in ctrl.endpoints), on
 * its row when it starts serving (null with --no-ctrl): every controller on the database shows every one's.
 */
export async function setCtrlAddress(ctx: Ctx, controllerId: string, address: string | null) {
  await ctx.store.db.updateTable('controllers').set({ ctrlAddress: address }).where('id', '=', controllerId).execute();
}

export const controllers = defineResource({
  name: 'controller',
  plural: 'controllers',
  table: 'controllers',
  apis: ['management', 'client'],
  ops: ['list'],
  description: 'Controllers serving this network\'s database, with their API addresses and certificates',
  schemas: {
    detail: Type.Object({ ...baseFields, name: Type.String(), certPem: Type.String(), fingerprint: Type.String(), isOnline: Type.Boolean(), lastJoinedAt: Type.String(), apiAddresses: MapOf(Type.Array(ApiAddress)), ctrlAddress: Type.Union([Type.String(), Type.Null()]) }),
  },
  filterable: {
    ...baseFilterable,
    name: { column: 'e.name', type: 'string', sortable: true },
    ctrlAddress: { column: 'e.ctrl_address', type: 'string', sortable: true },
    certPem: { column: 'e.cert_pem', type: 'string', sortable: true },
    fingerprint: { column: 'e.fingerprint', type: 'string', sortable: true },
    // Online: seen within the last few heartbeats, judged when the query is built.
    isOnline: { column: 'e.last_seen_at', type: 'boolean', sortable: true, expr: () => sql`(case when ${sql.ref('e.last_seen_at')} > ${new Date(Date.now() - ONLINE_WITHIN_MS).toISOString()} then 1 else 0 end)` },
    lastJoinedAt: { column: 'e.last_joined_at', type: 'datetime', sortable: true },
  },
  toDetail: (r, ctx) => Object.assign(baseDetail('controllers', r), {
    name: r.name,
    certPem: r.certPem,
    fingerprint: r.fingerprint,
    isOnline: ctx.clock.now().getTime() - Date.parse(r.lastSeenAt) < ONLINE_WITHIN_MS,
    lastJoinedAt: r.lastJoinedAt,
    apiAddresses: fromJson(r.apiAddresses, {}),
    ctrlAddress: r.ctrlAddress ?? null,
  }),
  cli: { columns: ['id', 'name', 'isOnline', 'lastJoinedAt', 'fingerprint'] },
});

/** This data dir's controller id, if a controller ever served it (nothing is made). */
export function readControllerId(dataDir: string): string | undefined {
  try {
    return fs.readFileSync(path.join(dataDir, 'controller-id'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** This controller's id: made once and kept in its data dir. */
export function controllerId(dataDir: string): string {
  const known = readControllerId(dataDir);
  if (known) return known;
  const id = randomUUID();
  fs.writeFileSync(path.join(dataDir, 'controller-id'), `${id}\n`, { mode: 0o600 });
  return id;
}

export function apiAddresses(ctx: Ctx) {
  const at = (p: string) => [{ url: `${advertisedApiUrl(ctx.config)}${p}`, version: 'v1' }];
  return { 'edge-client': at('/edge/client/v1'), 'edge-management': at('/edge/management/v1') };
}

/**
 * The API address (host:port) the controller of this data dir registered when it last served, if it
 * did: what a command on the host names as the issuer of JWTs it signs. Read-only (no controller-id
 * is made).
 */
export async function registeredApiAddress(db: Db, dataDir: string): Promise<string | undefined> {
  const id = readControllerId(dataDir);
  if (!id) return undefined;
  const row = await db.selectFrom('controllers').select('apiAddresses').where('id', '=', id).executeTakeFirst().catch(() => undefined);
  const url = fromJson<Record<string, { url: string }[]>>(row?.apiAddresses, {})['edge-management']?.[0]?.url;
  try {
    return url ? new URL(url).host : undefined;
  } catch {
    return undefined;
  }
}

/** Register (or re-register) this controller and keep its heartbeat; returns a stop function. */
export async function registerController(ctx: Ctx): Promise<() => Promise<void>> {
  const id = controllerId(ctx.config.dataDir);
  const now = iso(ctx.clock.now());
  const row = {
    name: ctx.config.hostnames[0] ?? 'localhost',
    certPem: ctx.pki.serverPem,
    fingerprint: ctx.pki.serverFingerprint,
    // Its replaced server certificates still published (model/pki/renewal.ts): the other controllers
    // keep accepting what their keys signed.
    retiredCerts: JSON.stringify(ctx.pki.signingKeys.filter((k) => k.retiredAt !== undefined && k.certPem).map((k) => ({ certPem: k.certPem, retiredAt: iso(new Date(k.retiredAt!)) }))),
    apiAddresses: JSON.stringify(apiAddresses(ctx)),
    lastJoinedAt: now,
    lastSeenAt: now,
    updatedAt: now,
  };
  await ctx.store.db
    .insertInto('controllers')
    .values({ id, createdAt: now, tags: '{}', ...row })
    .onConflict((oc) => oc.column('id').doUpdateSet(row))
    .execute();
  const beat = setInterval(() => {
    void ctx.store.db.updateTable('controllers').set({ lastSeenAt: iso(ctx.clock.now()) }).where('id', '=', id).execute().catch(() => {});
  }, HEARTBEAT_MS);
  beat.unref();
  // A clean stop ends its online window at once (not the heartbeat window later): lastSeenAt is only
  // read as "online until", so it is set back to where that window closes.
  return async () => {
    clearInterval(beat);
    const gone = iso(new Date(ctx.clock.now().getTime() - ONLINE_WITHIN_MS));
    const marked = ctx.store.db.updateTable('controllers').set({ lastSeenAt: gone }).where('id', '=', id).execute().catch(() => {});
    // A database that does not answer must not hold up the stop: the window then closes by itself.
    await Promise.race([marked, new Promise((r) => setTimeout(r, 2000).unref())]);
  };
}

/** How many controllers serve this database now (seen within the last few heartbeats). */
export async function onlineControllerCount(ctx: Ctx): Promise<number> {
  const since = new Date(ctx.clock.now().getTime() - ONLINE_WITHIN_MS).toISOString();
  const row = await ctx.store.db.selectFrom('controllers').select((eb) => eb.fn.countAll<number | string>().as('n')).where('lastSeenAt', '>', since).executeTakeFirst();
  return Number(row?.n ?? 0);
}
