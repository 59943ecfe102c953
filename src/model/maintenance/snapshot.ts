// Snapshots: a consistent copy of the live database in the data dir, named by the time it was taken.
import fs from 'node:fs';
import path from 'node:path';
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';
import { SnapshotUnavailable } from '../../store/db.js';

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
