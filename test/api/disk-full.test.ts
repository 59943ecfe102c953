// A full disk answers 503 with a message that says so (not 500 UNHANDLED) and changes nothing. The error
// is SQLite's own: a database whose page limit is reached fails its insert with SQLITE_FULL, the code a
// full disk gives, and the controller's error mapping turns it into the answer clients get.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { toApiError } from '../../src/server/plugins/errors.js';

function sqliteFullError(): Error {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-full-'));
  const db = new Database(path.join(dir, 'full.db'));
  try {
    db.exec('create table t (v text)');
    db.pragma(`max_page_count = ${Number(db.pragma('page_count', { simple: true }))}`);
    for (let i = 0; i < 10_000; i++) db.prepare('insert into t values (?)').run('x'.repeat(1000));
    throw new Error('the page limit did not fill the database');
  } catch (e) {
    return e as Error;
  } finally {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('a full disk', () => {
  it('is a 503 that says the disk is full and when to try again', () => {
    const err = sqliteFullError();
    expect((err as { code?: string }).code).toBe('SQLITE_FULL');
    const e = toApiError(err, {} as never);
    expect(e.status).toBe(503);
    expect(e.code).toBe('SERVICE_UNAVAILABLE');
    expect(e.message).toMatch(/disk is full/);
    expect(e.extra?.headers?.['retry-after']).toBe('30');
    for (const code of ['ENOSPC', '53100']) expect(toApiError(Object.assign(new Error('full'), { code }), {} as never).status).toBe(503);
  });
});
