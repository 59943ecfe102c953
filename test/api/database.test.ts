// Database maintenance: the integrity scan finds deliberately broken invariants, one run at a time,
// the fix repairs them; a snapshot taken during writes holds every write acknowledged before it.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_STALE_MS } from '../../src/model/maintenance/integrity.js';
import { loadSqlite } from '../../src/store/sqlite-driver.js';
import { expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });

async function finished() {
  for (let i = 0; i < 200; i++) {
    const r = (await mg('GET', '/database/data-integrity-results')).body.data;
    if (!r.inProgress) return r;
    await new Promise((res) => setTimeout(res, 25));
  }
  throw new Error('the integrity run did not finish');
}

describe('integrity scan', () => {
  it('finds nothing on a healthy database, finds what was broken, and the fix repairs it', async () => {
    const alice = (await mg('POST', '/identities', { name: 'alice', type: 'User', isAdmin: false, roleAttributes: ['staff'], tags: { team: 'a' } })).body.data.id;
    const svc = (await mg('POST', '/services', { name: 'web', encryptionRequired: true, roleAttributes: ['web'] })).body.data.id;
    const sp = (await mg('POST', '/service-policies', { name: 'p', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff', `@${alice}`], serviceRoles: ['#all'] })).body.data.id;
    expect((await mg('POST', '/database/check-data-integrity')).status).toBe(202);
    const clean = await finished();
    expect(clean).toMatchObject({ inProgress: false, fixingErrors: false, error: '', results: [] });
    expect(clean.endTime).toBeTruthy();

    // Break invariants behind the controller's back.
    const db = c.opened.ctx.store.db;
    await db.deleteFrom('policyMembers').where('policyId', '=', sp).where('entityId', '=', svc).execute();
    await db.insertInto('entityRoleAttributes').values({ entityId: 'ghost', attribute: 'x' }).execute();
    await db.updateTable('identities').set({ roleAttributes: JSON.stringify(['staff', 'extra']) }).where('id', '=', alice).execute();
    await db.deleteFrom('entityTags').where('entityId', '=', alice).execute();
    const bob = (await mg('POST', '/identities', { name: 'bobby', type: 'User', isAdmin: false })).body.data.id;
    await db.insertInto('authenticators').values({ id: 'broken-auth', identityId: bob, method: 'updb', username: 'bobby', passwordHash: null, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', tags: '{}', isIssuedByNetwork: 0 } as never).execute();

    expect((await mg('POST', '/database/check-data-integrity')).status).toBe(202);
    const found = await finished();
    const text = found.results.map((r: { description: string }) => r.description).join('\n');
    expect(text).toMatch(new RegExp(`policy ${sp}: its denormalised members are out of step`));
    expect(text).toMatch(/entity_role_attributes: rows for entity ghost/);
    expect(text).toMatch(new RegExp(`identities ${alice}: the role attribute index`));
    expect(text).toMatch(new RegExp(`identities ${alice}: the tag index`));
    expect(text).toMatch(/authenticator broken-auth \(updb\)/);
    expect(found.results.every((r: { fixed: boolean }) => !r.fixed)).toBe(true);
    // Scanning changes nothing.
    expect(await db.selectFrom('authenticators').select('id').where('id', '=', 'broken-auth').executeTakeFirst()).toBeTruthy();

    expect((await mg('POST', '/database/fix-data-integrity')).status).toBe(202);
    const fixed = await finished();
    expect(fixed.fixingErrors).toBe(true);
    expect(fixed.results.length).toBeGreaterThanOrEqual(5);
    expect(fixed.results.every((r: { fixed: boolean }) => r.fixed)).toBe(true);
    expect(await db.selectFrom('authenticators').select('id').where('id', '=', 'broken-auth').executeTakeFirst()).toBeUndefined();
    expect(await db.selectFrom('policyMembers').select('entityId').where('policyId', '=', sp).where('entityId', '=', svc).executeTakeFirst()).toBeTruthy();

    expect((await mg('POST', '/database/check-data-integrity')).status).toBe(202);
    expect((await finished()).results).toEqual([]);

    // Deleting an entity also takes it out of every policy that named it by id, AllOf ones too, as
    // upstream: an @id only ever adds its own entity (AllOf joins the attributes), so nobody is added.
    const narrow = (await mg('POST', '/service-policies', { name: 'alice-and-staff', type: 'Bind', semantic: 'AllOf', identityRoles: [`@${alice}`, '#staff'], serviceRoles: ['#all'] })).body.data.id;
    const carol = (await mg('POST', '/identities', { name: 'carol', type: 'User', isAdmin: false, roleAttributes: ['staff'] })).body.data.id;
    const before = ((await mg('GET', `/service-policies/${narrow}/identities?limit=100`)).body.data as { id: string }[]).map((i) => i.id);
    expect(before).toEqual(expect.arrayContaining([alice, carol]));
    expect((await mg('DELETE', `/identities/${alice}`)).status).toBe(200);
    expect((await mg('GET', `/service-policies/${sp}`)).body.data.identityRoles).toEqual(['#staff']);
    expect((await mg('GET', `/service-policies/${narrow}`)).body.data.identityRoles).toEqual(['#staff']);
    expect(((await mg('GET', `/service-policies/${narrow}/identities?limit=100`)).body.data as { id: string }[]).map((i) => i.id).sort()).toEqual(before.filter((i) => i !== alice).sort());
    expect((await mg('POST', '/database/check-data-integrity')).status).toBe(202);
    expect((await finished()).results).toEqual([]);
  });

  it('runs one at a time, and takes over a run whose process died', async () => {
    const db = c.opened.ctx.store.db;
    const now = () => c.clock.now().toISOString();
    const hold = (owner: string, heartbeatAt: string) => db.updateTable('integrityRuns').set({ inProgress: 1, startedAt: now(), owner, heartbeatAt }).where('id', '=', 1).execute();
    const results = async () => (await mg('GET', '/database/data-integrity-results')).body.data;
    // Held by a live process on another host (its heartbeat is fresh).
    await hold('other-host:4242:cafe', now());
    // As upstream: a second run while one runs is 429.
    expectError(await mg('POST', '/database/check-data-integrity'), 429, 'RATE_LIMITED');
    expectError(await mg('POST', '/database/fix-data-integrity'), 429);
    expect((await results()).inProgress).toBe(true);
    // Its heartbeat stops: the run is reported dead and taken over.
    c.clock.advance(RUN_STALE_MS + 1);
    expect(await results()).toMatchObject({ inProgress: false, error: expect.stringMatching(/stopped before it finished/) });
    expect((await mg('POST', '/database/check-data-integrity')).status).toBe(202);
    await finished();
    // Held by a process of this host that has exited: taken over at once, fresh heartbeat or not.
    const gone = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid!;
    await hold(`${os.hostname()}:${gone}:dead`, now());
    expect((await mg('POST', '/database/check-data-integrity')).status).toBe(202);
    await finished();
    // Held by a live process of this host: refused.
    await hold(`${os.hostname()}:${process.pid}:other`, now());
    expectError(await mg('POST', '/database/check-data-integrity'), 429);
    await db.updateTable('integrityRuns').set({ inProgress: 0 }).where('id', '=', 1).execute();
    // Two requests at once: one wins.
    const both = await Promise.all([mg('POST', '/database/check-data-integrity'), mg('POST', '/database/check-data-integrity')]);
    expect(both.map((r) => r.status).sort()).toEqual([202, 429]);
    await finished();
  });
});

describe('snapshot', () => {
  it('copies the live database during concurrent writes, with every write acknowledged before it', async () => {
    const acked: string[] = [];
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        const r = await mg('POST', '/identities', { name: `w-${i}`, type: 'Device', isAdmin: false });
        if (r.status === 201) acked.push(r.body.data.id);
      }
    })();
    while (acked.length < 20) await new Promise((r) => setTimeout(r, 5));
    const before = [...acked];
    const snap = await mg('POST', '/database/snapshot');
    stop = true;
    await writer;
    if (c.opened.ctx.store.file) {
      expect(snap.status, snap.text).toBe(200);
      // The answer names the file, never the server's path.
      expect(snap.text).not.toContain(c.dataDir);
      expect(snap.body.data.name).toMatch(/^ztc-\d{8}T\d{6}Z(-\d+)?\.db$/);
      const file = path.join(c.dataDir, 'snapshots', snap.body.data.name);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const Sqlite = loadSqlite();
      const copy = new Sqlite(file, { readonly: true });
      const ids = new Set((copy.prepare('select id from identities').all() as { id: string }[]).map((r) => r.id));
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      copy.close();
      for (const id of before) expect(ids.has(id)).toBe(true);
    } else if (snap.status === 200) {
      // PostgreSQL with pg_dump installed: the dump lists the identities table's data.
      expect(snap.text).not.toContain(c.dataDir);
      const listing = execFileSync('pg_restore', ['--list', path.join(c.dataDir, 'snapshots', snap.body.data.name)]).toString();
      expect(listing).toMatch(/TABLE DATA public identities/);
    } else {
      expect(expectError(snap, 409, 'SNAPSHOT_UNAVAILABLE').message).toMatch(/pg_dump/);
    }
    void sql;
  });

  it('takes one snapshot a minute, as upstream: the next within the minute is 429', async () => {
    c.clock.advance(61_000);
    admin = await c.login();
    const first = await mg('POST', '/database/snapshot');
    if (first.status !== 200) return; // PostgreSQL without pg_dump: nothing to rate-limit (the test above checks the refusal).
    const again = expectError(await mg('POST', '/database/snapshot'), 429, 'RATE_LIMITED');
    expect(again.message).toMatch(/one snapshot a minute/i);
    c.clock.advance(61_000);
    admin = await c.login();
    expect((await mg('POST', '/database/snapshot')).status).toBe(200);
  });
});
