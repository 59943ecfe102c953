// Request shapes OpenZiti's own clients send, answered as upstream's controller answers them:
// cleaned paths (ZAC reads entities back at `/<plural>/<id>//`), upstream's limit/offset rules
// (ZAC fills its pickers with `limit=-1`), and an unlimited list of a large table streamed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/model/ids.js';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
let serviceId: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  for (let i = 0; i < 14; i++) {
    const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: `p-${String(i).padStart(2, '0')}`, type: 'User', isAdmin: false } });
    expect(r.status).toBe(201);
  }
  const s = await c.call('POST', `${MGMT}/services`, { token: admin, body: { name: 'web', encryptionRequired: true } });
  serviceId = s.body.data.id;
}, 120_000);
afterAll(() => c.close());

const list = (query: string) => c.call('GET', `${MGMT}/identities?${query}`, { token: admin });

describe('paths as upstream cleans them (Go path.Clean before routing)', () => {
  it('answers ZAC’s `/<plural>/<id>//` detail read like the clean path', async () => {
    const clean = await c.call('GET', `${MGMT}/services/${serviceId}`, { token: admin });
    for (const p of [`${MGMT}/services/${serviceId}//`, `${MGMT}//services///${serviceId}/`, `${MGMT}/./services/./${serviceId}`, `${MGMT}/identities/../services/${serviceId}`]) {
      const r = await c.call('GET', p, { token: admin });
      expect(r.status, p).toBe(200);
      expect(r.body.data).toEqual(clean.body.data);
    }
  });

  it('applies to every method: an update through `//` changes the entity', async () => {
    const r = await c.call('PATCH', `${MGMT}/services/${serviceId}//`, { token: admin, body: { tags: { via: 'slashes' } } });
    expect(r.status).toBe(200);
    expect((await c.call('GET', `${MGMT}/services/${serviceId}`, { token: admin })).body.data.tags).toEqual({ via: 'slashes' });
    const q = await c.call('GET', `${MGMT}//identities/?limit=2`, { token: admin });
    expect(q.body.data).toHaveLength(2);
  });

  it('opens no way around authorization: a public path reached through `..` or `//` is still what it names', async () => {
    // Lands on an admin route: needs a session whatever the spelling.
    expectError(await c.call('GET', `${CLIENT}/version/../../../management/v1/identities`), 401, 'UNAUTHORIZED');
    expectError(await c.call('GET', `${MGMT}//identities//`), 401, 'UNAUTHORIZED');
    // Still public when spelled with extra slashes.
    expect((await c.call('GET', `${CLIENT}//version/`)).status).toBe(200);
    // `..` above the root stays at the root.
    expect((await c.call('GET', `/../../version`)).status).toBe(200);
  });
});

describe('limit and offset as upstream reads them (filter-symbols.md, limit / offset rules)', () => {
  it('limit=-1 and `limit none` mean no limit', async () => {
    const r = await list('limit=-1');
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(15);
    expect(r.body.meta.pagination).toMatchObject({ offset: 0, totalCount: 15 });
    expect((await list(`filter=${encodeURIComponent('true limit none')}`)).body.data).toHaveLength(15);
    expect((await list('limit=-1&offset=10')).body.data).toHaveLength(5);
  });

  it('a missing limit, 0 or below -1 is the default page of 10; above 500 it is clamped, not refused', async () => {
    for (const q of ['', 'limit=0', 'limit=-2', 'limit=-500']) {
      const r = await list(q);
      expect(r.status, q).toBe(200);
      expect(r.body.data, q).toHaveLength(10);
      expect(r.body.meta.pagination.limit, q).toBe(10);
    }
    const big = await list('limit=100000');
    expect(big.status).toBe(200);
    expect(big.body.meta.pagination.limit).toBe(500);
  });

  it('a negative offset is 0 and one above 100000 is 100000; a non-number is a 400', async () => {
    expect((await list('offset=-5')).body.meta.pagination.offset).toBe(0);
    const far = await list('offset=200000');
    expect(far.status).toBe(200);
    expect(far.body.meta.pagination.offset).toBe(100000);
    expect(far.body.data).toEqual([]);
    expect((await list('limit=ten')).status).toBe(400);
  });

  it('takes `sort=` when the filter has none, as upstream', async () => {
    const r = await list(`sort=${encodeURIComponent('name desc')}&filter=${encodeURIComponent('name contains "p-"')}&limit=2`);
    expect(r.body.data.map((d: { name: string }) => d.name)).toEqual(['p-13', 'p-12']);
    expectError(await list('sort=roleAttributes'), 400, 'INVALID_SORT_IDENTIFIER');
  });

  it('role-attribute lists ignore the query string’s paging and answer every attribute', async () => {
    for (let i = 0; i < 12; i++) {
      await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: `attrs-${i}`, type: 'User', isAdmin: false, roleAttributes: [`attr-${i}`] } });
    }
    const r = await c.call('GET', `${MGMT}/identity-role-attributes?limit=3`, { token: admin });
    expect(r.body.data).toHaveLength(12);
    expect(r.body.meta.filterableFields).toEqual(['id']);
    const limited = await c.call('GET', `${MGMT}/identity-role-attributes?filter=${encodeURIComponent('id contains "attr" sort by id limit 2')}`, { token: admin });
    expect(limited.body.data).toEqual(['attr-0', 'attr-1']);
  });
});

describe('an unlimited list of a large table', () => {
  it('answers 20,000 identities with limit=-1, streamed in chunks', async () => {
    // 40 chunks of STREAM_CHUNK (500): as many as the chunking needs to show; 100,000 cost 18 s of CPU.
    const N = 20_000;
    const now = new Date().toISOString();
    const db = c.opened.ctx.store.db;
    const rows = Array.from({ length: N }, (_, i) => ({
      id: newId(), createdAt: now, updatedAt: now, tags: '{}', name: `bulk-${String(i).padStart(6, '0')}`, typeId: 'Default', isAdmin: 0, isDefaultAdmin: 0,
      authPolicyId: 'default', externalId: null, defaultHostingPrecedence: 'default', defaultHostingCost: 0, serviceHostingCosts: '{}', serviceHostingPrecedences: '{}',
      appData: '{}', roleAttributes: '[]', envInfo: '{}', sdkInfo: '{}', disabled: 0, disabledAt: null, disabledUntil: null,
    }));
    await db.transaction().execute(async (tx) => {
      for (let i = 0; i < rows.length; i += 1000) await tx.insertInto('identities').values(rows.slice(i, i + 1000) as never).execute();
    });
    const r = await c.call('GET', `${MGMT}/identities?limit=-1&filter=${encodeURIComponent('name contains "bulk-" sort by name')}`, { token: admin });
    expect(r.status).toBe(200);
    // Written as it was read: no length known in advance.
    expect(r.headers['content-length']).toBeUndefined();
    expect(String(r.headers['content-type'])).toMatch(/^application\/json/);
    expect(r.body.data).toHaveLength(N);
    expect(r.body.data[0].name).toBe('bulk-000000');
    expect(r.body.data[N - 1].name).toBe(`bulk-${String(N - 1).padStart(6, '0')}`);
    expect(r.body.meta.pagination).toMatchObject({ offset: 0, totalCount: N });
  }, 300_000);
});
