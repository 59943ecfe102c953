// Snapshots: a consistent copy of the live database in the data dir, named by the time it was taken.
import fs from 'node:fs';
import path from 'node:path';
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';
import { SnapshotUnavailable } from '../../store/db.js';

/** As upstream: at most one snapshot a minute per controller, so a loop cannot fill the disk. */
export const SNAPSHOT_INTERVAL_MS = 60_000;
// Keyed by the controller's event hub, which the per-request copies of the context share (server/actor.ts).
const lastSnapshot = new WeakMap<Ctx['events'], number>();

/**
 * A snapshot as the API answers it: the file's name within the data dir's snapshots/ directory and
 * its size, not the server's absolute path (upstream's answer is empty; the name is what an operator
 * on the host needs). 429 within a minute of the previous one.
 */
export async function snapshotForApi(ctx: Ctx): Promise<{ name: string; sizeBytes: number }> {
  const now = ctx.clock.now().getTime();
  const last = lastSnapshot.get(ctx.events);
  if (last !== undefined && now - last < SNAPSHOT_INTERVAL_MS) {
    const seconds = Math.ceil((SNAPSHOT_INTERVAL_MS - (now - last)) / 1000);
    throw new ApiError(429, 'RATE_LIMITED', `One snapshot a minute: try again in ${seconds} s`, undefined, { headers: { 'retry-after': String(seconds) } });
  }
  // Claimed before the copy starts, so two requests at once do not both copy.
  lastSnapshot.set(ctx.events, now);
  let taken: { path: string; sizeBytes: number };
  try {
    taken = await takeSnapshot(ctx);
  } catch (e) {
    // A snapshot that failed (no pg_dump, a full disk) does not count: the retry after the fix is not 429.
    if (lastSnapshot.get(ctx.events) === now) lastSnapshot.delete(ctx.events);
    throw e;
  }
  return { name: path.basename(taken.path), sizeBytes: taken.sizeBytes };
}

export async function takeSnapshot(ctx: Ctx, progress?: (fraction: number) => void): Promise<{ path: string; sizeBytes: number }> {
  const dir = path.join(ctx.config.dataDir, 'snapshots');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stamp = ctx.clock.now().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const ext = ctx.store.file ? 'db' : 'dump';
  let dest = path.join(dir, `ztc-${stamp}.${ext}`);
  for (let n = 1; fs.existsSync(dest); n++) dest = path.join(dir, `ztc-${stamp}-${n}.${ext}`);
  // The copy holds password hashes and keys' metadata: readable by the owner only, from the first byte.
  fs.closeSync(fs.openSync(dest, 'w', 0o600));
  try {
    await ctx.store.snapshot(dest, progress);
  } catch (e) {
    fs.rmSync(dest, { force: true });
    if (e instanceof SnapshotUnavailable) throw new ApiError(409, 'SNAPSHOT_UNAVAILABLE', e.message);
    throw e;
  }
  fs.chmodSync(dest, 0o600);
  return { path: dest, sizeBytes: fs.statSync(dest).size };
}
