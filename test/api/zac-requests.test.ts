// Requests OpenZiti's admin console (ZAC 4.5) makes, found by driving it against ztc, answered as
// upstream's controller answers them. Each case is written from the request shape alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { MGMT, startTestController, tempDataDir, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });

describe('built-in config types under upstream ids', () => {
  // Upstream's first migration creates its built-in config types with fixed ids, and ZAC's "simple
  // service" form posts its two configs with configTypeId "g7cIWbcGg" (intercept.v1) and "NH5p4FpGR"
  // (host.v1) without looking them up.
  it('accepts the configs of ZAC\'s simple-service form with upstream\'s fixed config type ids', async () => {
    const intercept = await mg('POST', '/configs', { name: 'svc-intercept-config', configTypeId: 'g7cIWbcGg', data: { portRanges: [{ high: 443, low: 443 }], addresses: ['simple.ziti'], protocols: ['tcp', 'udp'] } });
    expect(intercept.status, intercept.text).toBe(201);
    const host = await mg('POST', '/configs', { name: 'svc-host-config', configTypeId: 'NH5p4FpGR', data: { address: 'localhost', port: 8080, forwardProtocol: true, allowedProtocols: ['tcp'] } });
    expect(host.status, host.text).toBe(201);
    const read = (await mg('GET', `/configs/${intercept.body.data.id}`)).body.data;
    expect(read).toMatchObject({ configTypeId: 'g7cIWbcGg', configType: { id: 'g7cIWbcGg', name: 'intercept.v1' } });
  });

  it('lists every built-in type under upstream\'s id (names still resolve too)', async () => {
    const types = (await mg('GET', '/config-types?limit=-1')).body.data as { id: string; name: string }[];
    const byName = Object.fromEntries(types.map((t) => [t.name, t.id]));
    expect(byName).toMatchObject({
      'intercept.v1': 'g7cIWbcGg',
      'host.v1': 'NH5p4FpGR',
      'host.v2': 'host.v2',
      'ziti-tunneler-client.v1': 'f2dd2df0-9c04-4b84-a91e-71437ac229f1',
      'ziti-tunneler-server.v1': 'cea49285-6c07-42cf-9f52-09a9b115c783',
    });
    expect((await mg('GET', '/config-types/intercept.v1')).status).toBe(404);
    const cfg = await mg('POST', '/configs', { name: 'by-name', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'x', port: 1 } });
    expect(cfg.body.data, cfg.text).toBeTruthy();
    expect((await mg('GET', `/configs/${cfg.body.data.id}`)).body.data.configTypeId).toBe('NH5p4FpGR');
  });

  it('moves the built-in types of a database made before, with the configs and services that use them', async () => {
    const dataDir = tempDataDir();
    const first = await startTestController({ dataDir });
    const token = await first.login();
    const call = (method: string, path: string, body?: unknown) => first.call(method, `${MGMT}${path}`, { token, body });
    const cfg = (await call('POST', '/configs', { name: 'old-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['old.ziti'], portRanges: [{ low: 1, high: 1 }] } })).body.data.id;
    const svc = (await call('POST', '/services', { name: 'old-svc', encryptionRequired: true, configs: [cfg] })).body.data.id;
    // Put the database back as earlier versions left it: built-in types under their names.
    const db = first.opened.ctx.store.db;
    await db.transaction().execute(async (tx) => {
      for (const [name, id] of [['intercept.v1', 'g7cIWbcGg'], ['host.v1', 'NH5p4FpGR']]) {
        const row = await tx.selectFrom('configTypes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        await tx.insertInto('configTypes').values({ ...row, id: name, name: `${name}-old` }).execute();
        await tx.updateTable('configs').set({ configTypeId: name }).where('configTypeId', '=', id).execute();
        await tx.updateTable('serviceConfigs').set({ configTypeId: name }).where('configTypeId', '=', id).execute();
        await tx.deleteFrom('configTypes').where('id', '=', id).execute();
        await tx.updateTable('configTypes').set({ name }).where('id', '=', name).execute();
      }
      await sql`delete from kysely_migration where name = '0009-upstream-config-type-ids'`.execute(tx);
    });
    await first.app.close();
    await first.opened.close();

    const second = await startTestController({ dataDir, config: { db: first.config.db } });
    try {
      const t2 = await second.login();
      const get = async (path: string) => (await second.call('GET', `${MGMT}${path}`, { token: t2 })).body.data;
      expect((await get(`/configs/${cfg}`)).configType).toMatchObject({ id: 'g7cIWbcGg', name: 'intercept.v1' });
      expect((await get(`/services/${svc}`)).configs).toEqual([cfg]);
      const names = ((await get('/config-types?limit=-1')) as { id: string; name: string }[]).map((t) => `${t.name}=${t.id}`);
      expect(names).toEqual(expect.arrayContaining(['intercept.v1=g7cIWbcGg', 'host.v1=NH5p4FpGR']));
      expect(names).toHaveLength(5);
    } finally {
      await second.close();
    }
  });
});
