// An unlucky operator: a damaged SQLite file, an integrity run whose process died, a read-only data
// dir. The built program must say what is wrong and what to do, never serve or write a damaged file,
// and never print a stack trace.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSqlite } from '../../src/store/sqlite-driver.js';
import { ADMIN, MGMT, startTestController, tempDataDir } from '../helpers/controller.js';

const bin = path.resolve('bin/ztc');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-home-'));

// These runs use the data dir's SQLite file whatever ZTC_TEST_DB says: the damage is to that file.
function ztc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { env: { ...process.env, ZTC_HOME: home, ZTC_DATA_DIR: '', ZTC_DB: '' }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A data dir with a populated SQLite database and one snapshot, closed cleanly. */
async function populated(identities: number): Promise<string> {
  const dir = tempDataDir();
  const c = await startTestController({ dataDir: dir, config: { db: '', authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 } });
  const admin = await c.login();
  for (let i = 0; i < identities; i++) {
    const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: `device-${i}`, type: 'Device', isAdmin: false, roleAttributes: [`site-${i % 7}`], tags: { serial: `sn-${i}`.padEnd(200, 'x') } } });
    expect(r.status).toBe(201);
  }
  expect((await c.call('POST', `${MGMT}/database/snapshot`, { token: admin })).status).toBe(200);
  await c.app.close();
  await c.opened.close();
  return dir;
}

const sha = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

describe('a damaged database', { timeout: 120_000 }, () => {
  let dir = '';
  beforeAll(async () => {
    dir = await populated(300);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is refused at start with how to restore the snapshot, and left untouched', async () => {
    const file = path.join(dir, 'ztc.db');
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const bytes = fs.readFileSync(file);
    expect(bytes.length).toBeGreaterThan(200 * 4096);
    // 4 KB in the middle of the file, flipped.
    const at = Math.floor(bytes.length / 2 / 4096) * 4096;
    for (let i = at; i < at + 4096; i++) bytes[i] ^= 0xff;
    fs.writeFileSync(file, bytes);
    const before = sha(file);

    const served = await ztc('serve', '--data-dir', dir, '--port', '0', '--admin-password', ADMIN.password);
    expect(served.code).toBe(1);
    expect(served.stdout).not.toMatch(/listening/);
    expect(served.stderr).toMatch(/the database .*ztc\.db is damaged \(SQLite: /);
    expect(served.stderr).toMatch(/will not serve from it or write to it/);
    expect(served.stderr).toMatch(/restore the latest snapshot \(.*snapshots\/ztc-\d{8}T\d{6}Z\.db\)/);
    expect(served.stderr).not.toMatch(/^\s+at /m);

    const checked = await ztc('db', 'check', '-d', dir);
    expect(checked.code).toBe(1);
    expect(checked.stderr).toMatch(/is damaged/);
    expect(sha(file)).toBe(before);

    // Following the message brings the controller back.
    const snapshot = /restore the latest snapshot \(([^)]+)\)/.exec(served.stderr)![1];
    fs.renameSync(file, `${file}.damaged`);
    fs.copyFileSync(snapshot, file);
    const after = await ztc('db', 'check', '-d', dir);
    expect(after.stdout, after.stderr).toMatch(/no problems found/);
  });

  it('shows what only the full integrity_check finds in `ztc db check`', async () => {
    // An index whose entries no longer match its table's rows (same count): quick_check counts index
    // entries but does not compare them with the table; integrity_check does.
    const file = path.join(dir, 'ztc.db');
    const Sqlite = loadSqlite();
    const conn = new Sqlite(file);
    const index = conn.prepare("select sql from sqlite_master where type = 'index' and tbl_name = 'entity_role_attributes' and sql is not null").get() as { sql: string } | undefined;
    const name = index ? /index\s+"?(\w+)"?/i.exec(index.sql)![1] : undefined;
    expect(name).toBeTruthy();
    // Defensive mode (better-sqlite3's default) forbids editing the schema table; unsafe mode allows it.
    conn.unsafeMode(true);
    conn.pragma('writable_schema = ON');
    const saved = conn.prepare('select * from sqlite_master where name = ?').get(name) as Record<string, unknown>;
    conn.prepare('delete from sqlite_master where name = ?').run(name);
    conn.close();
    const again = new Sqlite(file);
    expect(again.prepare("update entity_role_attributes set attribute = 'moved' where rowid = (select min(rowid) from entity_role_attributes)").run().changes).toBe(1);
    again.unsafeMode(true);
    again.pragma('writable_schema = ON');
    again.prepare('insert into sqlite_master (type, name, tbl_name, rootpage, sql) values (?, ?, ?, ?, ?)').run(saved.type, saved.name, saved.tbl_name, saved.rootpage, saved.sql);
    again.close();
    expect((new Sqlite(file, { readonly: true }).pragma('quick_check') as { quick_check: string }[])[0].quick_check).toBe('ok');
    const checked = await ztc('db', 'check', '-d', dir);
    expect(checked.code).toBe(3);
    expect(checked.stdout).toMatch(/SQLite integrity_check: .*(missing from index|entity_role_attributes_attribute)/);
  });
});

describe('an integrity run whose process died', { timeout: 120_000 }, () => {
  let dir = '';
  beforeAll(async () => {
    dir = await populated(0);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('does not block `ztc db check` with no server running', async () => {
    // The lock as a `ztc db check` killed mid-scan leaves it: its owner was this host, the process is gone.
    const gone = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid!;
    const Sqlite = loadSqlite();
    const conn = new Sqlite(path.join(dir, 'ztc.db'));
    const now = new Date().toISOString();
    conn.prepare('update integrity_runs set in_progress = 1, started_at = ?, heartbeat_at = ?, owner = ? where id = 1').run(now, now, `${os.hostname()}:${gone}:deadbeef`);
    conn.close();
    const checked = await ztc('db', 'check', '-d', dir);
    expect(checked.stderr).not.toMatch(/already running/);
    expect(checked.code).toBe(0);
    expect(checked.stdout).toMatch(/no problems found/);
  });
});

describe('a data dir that cannot be written', { timeout: 60_000 }, () => {
  let dir = '';
  let mounted = false;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-ro-'));
    if (process.getuid?.() === 0) {
      // Root ignores permission bits: a read-only mount is the real thing.
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', dir], { stdio: 'ignore' });
        mounted = true;
      } catch {
        mounted = false;
      }
    } else fs.chmodSync(dir, 0o500);
  });
  afterAll(() => {
    if (mounted) execFileSync('umount', [dir]);
    fs.chmodSync(dir, 0o700);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stops the server with the path that is not writable and why, not a stack trace', async () => {
    // Without a read-only mount as root, a path through a file is the unwritable case left.
    const target = mounted || process.getuid?.() !== 0 ? dir : path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-f-')), 'file');
    if (target !== dir) fs.writeFileSync(target, '');
    const served = await ztc('serve', '--data-dir', path.join(target, ...(target === dir ? [] : ['data'])), '--port', '0', '--admin-password', ADMIN.password);
    expect(served.code).toBe(1);
    expect(served.stderr).toMatch(/^error: \/\S+ is not writable \(/m);
    if (mounted) expect(served.stderr).toMatch(/read-only file system, EROFS/);
    expect(served.stderr).toMatch(/--data-dir/);
    expect(served.stderr).not.toMatch(/^\s+at /m);
  });
});
