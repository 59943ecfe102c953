import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kysely } from 'kysely';
import { identityTypesDefault } from '../../src/store/migrations/0012-identity-types-default.js';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const create = (body: unknown) => c.call('POST', `${MGMT}/identities`, { token: admin, body });

describe('identities', () => {
  it('creates, reads, replaces, patches and deletes', async () => {
    const made = await create({
      name: 'web-01', type: 'Device', isAdmin: false, roleAttributes: ['web', 'prod', 'web'], tags: { env: 'prod', managed: true, note: null },
      defaultHostingCost: 10, defaultHostingPrecedence: 'required', serviceHostingCosts: { svc1: 5 }, serviceHostingPrecedences: { svc1: 'failed' },
      appData: { team: { lead: 'x' } }, externalId: 'ext-1',
    });
    expect(made.status).toBe(201);
    const id = made.body.data.id;
    expect(made.body.data._links.self.href).toBe(`./identities/${id}`);
    // The links upstream puts on an identity, on its detail and on references to it.
    const links = {
      self: { href: `./identities/${id}` }, 'edge-router-policies': { href: `./identities/${id}/edge-router-policies` }, 'edge-routers': { href: `./identities/${id}/edge-routers` }, 'service-configs': { href: `./identities/${id}/service-configs` }, services: { href: `./identities/${id}/services` },
      'service-policies': { href: `./identities/${id}/service-policies` }, 'posture-data': { href: `./identities/${id}/posture-data` },
      'failed-service-requests': { href: `./identities/${id}/failed-service-requests` }, authenticators: { href: `./identities/${id}/authenticators` },
      enrollments: { href: `./identities/${id}/enrollments` },
    };
    expect((await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data._links).toEqual({ ...links, 'auth-policies': { href: './auth-policies/default' } });
    for (const rel of Object.values(links)) expect((await c.call('GET', `${MGMT}${rel.href.slice(1)}`, { token: admin })).status).toBe(200);
    await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: 'web-01-login', password: 'web-01-pass' } });
    const session = await c.login('web-01-login', 'web-01-pass');
    const listed = (await c.call('GET', `${MGMT}/api-sessions?filter=${encodeURIComponent(`identityId = "${id}"`)}`, { token: admin })).body.data[0];
    expect(listed.identity._links).toEqual(links);
    // The current identity links its MFA, as upstream's does.
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token: session })).body.data._links.mfa).toEqual({ href: './current-identity/mfa' });
    // It is read beside the API session, by the session's token: the same detail the admin reads, for
    // this caller whoever else is logged in; and the same through an API token (no session to read it by).
    const byAdmin = (await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data;
    const mine = (await c.call('GET', `${CLIENT}/current-identity`, { token: session })).body.data;
    expect(mine).toEqual({ ...byAdmin, _links: { ...byAdmin._links, mfa: { href: './current-identity/mfa' } } });
    const adminMe = (await c.call('GET', `${CLIENT}/current-identity`, { token: admin })).body.data;
    expect(adminMe.id).not.toBe(id);
    const apiToken = (await c.call('POST', `${MGMT}/api-tokens`, { token: admin, body: { name: 'admin-token', expiresInDays: 1 } })).body.data.token;
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token: apiToken })).body.data).toEqual(adminMe);
    expectError(await c.call('GET', `${CLIENT}/current-identity`, { token: 'not-a-session' }), 401, 'UNAUTHORIZED');
    await c.call('DELETE', `${MGMT}/api-sessions/${listed.id}`, { token: admin });

    const got = await c.call('GET', `${MGMT}/identities/${id}`, { token: admin });
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({
      // As upstream 1.x: Device (and User, Service) are accepted and stored as Default.
      id, name: 'web-01', typeId: 'Default', type: { id: 'Default', name: 'Default', entity: 'identity-types' }, isAdmin: false, isDefaultAdmin: false,
      roleAttributes: ['prod', 'web'], tags: { env: 'prod', managed: true, note: null }, defaultHostingCost: 10, defaultHostingPrecedence: 'required',
      serviceHostingCosts: { svc1: 5 }, serviceHostingPrecedences: { svc1: 'failed' }, appData: { team: { lead: 'x' } }, externalId: 'ext-1',
      authPolicyId: 'default', authPolicy: { id: 'default', name: 'Default' }, authenticators: {}, disabled: false, hasApiSession: false,
    });

    const put = await c.call('PUT', `${MGMT}/identities/${id}`, { token: admin, body: { name: 'web-02', type: 'User', isAdmin: true } });
    expect(put.status).toBe(200);
    expect(put.body.data).toEqual({});
    const replaced = (await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data;
    // Replace resets what it does not name.
    expect(replaced).toMatchObject({ name: 'web-02', typeId: 'Default', isAdmin: true, roleAttributes: [], tags: {}, defaultHostingCost: 0, externalId: null });
    expect(Date.parse(replaced.updatedAt)).toBeGreaterThanOrEqual(Date.parse(replaced.createdAt));

    expect((await c.call('PATCH', `${MGMT}/identities/${id}`, { token: admin, body: { roleAttributes: ['db'], tags: { a: 'b' } } })).status).toBe(200);
    const patched = (await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data;
    expect(patched).toMatchObject({ name: 'web-02', isAdmin: true, roleAttributes: ['db'], tags: { a: 'b' } });

    expect((await c.call('DELETE', `${MGMT}/identities/${id}`, { token: admin })).status).toBe(200);
    expectError(await c.call('GET', `${MGMT}/identities/${id}`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await c.call('DELETE', `${MGMT}/identities/${id}`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await c.call('PUT', `${MGMT}/identities/${id}`, { token: admin, body: { name: 'x', type: 'User', isAdmin: false } }), 404, 'NOT_FOUND');
    expectError(await c.call('PATCH', `${MGMT}/identities/${id}`, { token: admin, body: { name: 'x' } }), 404, 'NOT_FOUND');
  });

  it('refuses each invalid field with a 400 that names it and writes nothing', async () => {
    const before = (await c.call('GET', `${MGMT}/identities`, { token: admin })).body.meta.pagination.totalCount;
    // A value of the wrong JSON type is COULD_NOT_PARSE_BODY, as upstream's Go decoder answers it (a null is
    // read as unset there, then refused as COULD_NOT_VALIDATE); the rest COULD_NOT_VALIDATE. A field the
    // body does not declare is no error: dropped, as upstream drops it (upstream-bodies.test.ts).
    const P = 'COULD_NOT_PARSE_BODY';
    const cases: [unknown, string, string?][] = [
      [{ type: 'User', isAdmin: false }, 'name'],
      [{ name: 'a', isAdmin: false }, 'type'],
      [{ name: 'a', type: 'User' }, 'isAdmin'],
      [{ name: 'a', type: 'Robot', isAdmin: false }, 'type'],
      [{ name: '', type: 'User', isAdmin: false }, 'name'],
      [{ name: null, type: 'User', isAdmin: false }, 'name'],
      [{ name: 5, type: 'User', isAdmin: false }, 'name', P],
      [{ name: 'a', type: 'User', isAdmin: 'yes' }, 'isAdmin', P],
      [{ name: 'a', type: 'User', isAdmin: false, defaultHostingCost: 65536 }, 'defaultHostingCost'],
      [{ name: 'a', type: 'User', isAdmin: false, defaultHostingCost: -1 }, 'defaultHostingCost'],
      [{ name: 'a', type: 'User', isAdmin: false, defaultHostingCost: 1.5 }, 'defaultHostingCost', P],
      [{ name: 'a', type: 'User', isAdmin: false, defaultHostingPrecedence: 'sometimes' }, 'defaultHostingPrecedence'],
      [{ name: 'a', type: 'User', isAdmin: false, serviceHostingCosts: { s: 70000 } }, 'serviceHostingCosts.s'],
      [{ name: 'a', type: 'User', isAdmin: false, tags: { nested: { no: 1 } } }, 'tags.nested'],
      [{ name: 'a', type: 'User', isAdmin: false, tags: { n: 5 } }, 'tags.n'],
      [{ name: 'a', type: 'User', isAdmin: false, tags: ['x'] }, 'tags', P],
      [{ name: 'a', type: 'User', isAdmin: false, roleAttributes: 'web' }, 'roleAttributes', P],
      [{ name: 'a', type: 'User', isAdmin: false, authPolicyId: 'no-such-policy' }, 'authPolicyId', 'INVALID_FIELD'],
    ];
    for (const [body, field, code = 'COULD_NOT_VALIDATE'] of cases) {
      const e = expectError(await create(body), 400);
      expect([e.code, e.cause?.field], JSON.stringify(body)).toEqual([code, field]);
    }
    expectError(await create([]), 400, 'COULD_NOT_PARSE_BODY');
    expectError(await create('not json'), 400, 'COULD_NOT_PARSE_BODY');
    expect((await c.call('GET', `${MGMT}/identities`, { token: admin })).body.meta.pagination.totalCount).toBe(before);
  });

  it('accepts null tags and keeps names unique', async () => {
    const a = await create({ name: 'unique-1', type: 'User', isAdmin: false, tags: null });
    expect(a.status).toBe(201);
    const dup = expectError(await create({ name: 'unique-1', type: 'User', isAdmin: false }), 400, 'COULD_NOT_VALIDATE');
    expect(dup.cause.field).toBe('name');
    const b = await create({ name: 'unique-2', type: 'User', isAdmin: false });
    expect(expectError(await c.call('PATCH', `${MGMT}/identities/${b.body.data.id}`, { token: admin, body: { name: 'unique-1' } }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('name');
  });

  it('protects the default admin', async () => {
    const me = (await c.call('GET', `${CLIENT}/current-identity`, { token: admin })).body.data;
    expectError(await c.call('DELETE', `${MGMT}/identities/${me.id}`, { token: admin }), 400, 'ENTITY_CAN_NOT_BE_DELETED');
    expectError(await c.call('PATCH', `${MGMT}/identities/${me.id}`, { token: admin, body: { isAdmin: false } }), 400, 'INVALID_FIELD');
    expect((await c.call('GET', `${MGMT}/identities/${me.id}`, { token: admin })).body.data.isAdmin).toBe(true);
  });

  it('pages with correct totals and filters by name', async () => {
    for (let i = 0; i < 25; i++) expect((await create({ name: `page-${String(i).padStart(2, '0')}`, type: 'User', isAdmin: false })).status).toBe(201);
    const all = await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name contains "page-"')}&limit=10&offset=20`, { token: admin });
    expect(all.status).toBe(200);
    expect(all.body.meta.pagination).toEqual({ limit: 10, offset: 20, totalCount: 25 });
    expect(all.body.data).toHaveLength(5);
    expect(all.body.meta.filterableFields).toContain('name');

    const dflt = await c.call('GET', `${MGMT}/identities`, { token: admin });
    expect(dflt.body.data).toHaveLength(10);
    expect(dflt.body.meta.pagination.limit).toBe(10);

    const one = await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "page-07"')}`, { token: admin });
    expect(one.body.data.map((d: { name: string }) => d.name)).toEqual(['page-07']);
    expect(one.body.meta.pagination.totalCount).toBe(1);

    const capped = await c.call('GET', `${MGMT}/identities?limit=1000`, { token: admin });
    expect(capped.body.meta.pagination.limit).toBe(500);
    // As upstream: a negative offset is 0 and limit 0 is the default page (upstream-paths-paging.test.ts has the rules).
    expect((await c.call('GET', `${MGMT}/identities?offset=-1`, { token: admin })).body.meta.pagination.offset).toBe(0);
    expect((await c.call('GET', `${MGMT}/identities?limit=0`, { token: admin })).body.meta.pagination.limit).toBe(10);
    expectError(await c.call('GET', `${MGMT}/identities?limit=-1e400`, { token: admin }), 400, 'INVALID_PAGINATION');
    expectError(await c.call('GET', `${MGMT}/identities?limit=abc`, { token: admin }), 400, 'COULD_NOT_VALIDATE');
    expectError(await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('colour = "red"')}`, { token: admin }), 400, 'INVALID_FILTER');
  });

  it('lists the identity types as upstream 1.x: Default and Router, the old names stored as Default', async () => {
    const r = await c.call('GET', `${MGMT}/identity-types`, { token: admin });
    expect(r.body.data.map((t: { id: string }) => t.id).sort()).toEqual(['Default', 'Router']);
    for (const type of ['User', 'Device', 'Service', 'Default', 'Router']) {
      const made = await create({ name: `typed-${type}`, type, isAdmin: false });
      expect(made.status).toBe(201);
      const got = (await c.call('GET', `${MGMT}/identities/${made.body.data.id}`, { token: admin })).body.data;
      const stored = type === 'Router' ? 'Router' : 'Default';
      expect(got).toMatchObject({ typeId: stored, type: { id: stored, name: stored } });
    }
    const patched = (await create({ name: 'typed-patch', type: 'Router', isAdmin: false })).body.data.id;
    expect((await c.call('PATCH', `${MGMT}/identities/${patched}`, { token: admin, body: { type: 'Service' } })).status).toBe(200);
    expect((await c.call('GET', `${MGMT}/identities/${patched}`, { token: admin })).body.data.typeId).toBe('Default');
    const filtered = (await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('type = "Default" and name contains "typed-"')}&limit=100`, { token: admin })).body.data;
    expect(filtered.map((i: { name: string }) => i.name).sort()).toEqual(['typed-Default', 'typed-Device', 'typed-Service', 'typed-User', 'typed-patch']);
    const me = (await c.call('GET', `${CLIENT}/current-identity`, { token: admin })).body.data;
    expect(me.typeId).toBe('Default');
    expect((await c.call('GET', `${MGMT}/identity-types/Router`, { token: admin })).body.data.name).toBe('Router');
    expectError(await c.call('GET', `${MGMT}/identity-types/Robot`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await c.call('GET', `${MGMT}/identity-types/Device`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await c.call('POST', `${MGMT}/identity-types`, { token: admin, body: { name: 'x' } }), 405, 'METHOD_NOT_ALLOWED');
  });
});

describe('identity types of a database made before upstream 1.x types', () => {
  it('moves User, Device and Service identities to Default and drops those types', async () => {
    const db = c.opened.ctx.store.db as unknown as Kysely<any>;
    const now = new Date().toISOString();
    for (const old of ['User', 'Device', 'Service']) await db.insertInto('identity_types').values({ id: old, name: old, created_at: now, updated_at: now, tags: '{}' }).execute();
    const legacy = (await create({ name: 'legacy-device', type: 'Default', isAdmin: false })).body.data.id;
    await db.updateTable('identities').set({ type_id: 'Device' }).where('id', '=', legacy).execute();
    await identityTypesDefault().up(db);
    expect((await c.call('GET', `${MGMT}/identities/${legacy}`, { token: admin })).body.data.typeId).toBe('Default');
    expect((await c.call('GET', `${MGMT}/identity-types`, { token: admin })).body.data.map((t: { id: string }) => t.id).sort()).toEqual(['Default', 'Router']);
  });
});

describe('management authorization', () => {
  it('refuses every management route to a non-admin and to no session', async () => {
    await c.user('not-admin');
    const user = await c.login('not-admin', 'password1');
    const routes = c.app.routeTable.routes.filter((r) => r.url.startsWith(MGMT) && r.access === 'admin');
    // The foundation's identity, identity type and authenticator routes are all among them.
    expect(routes.map((r) => `${r.method} ${r.url}`)).toEqual(expect.arrayContaining([
      `GET ${MGMT}/identities`, `POST ${MGMT}/identities`, `GET ${MGMT}/identities/:id`, `PUT ${MGMT}/identities/:id`, `PATCH ${MGMT}/identities/:id`, `DELETE ${MGMT}/identities/:id`,
      `GET ${MGMT}/authenticators`, `POST ${MGMT}/authenticators`, `GET ${MGMT}/authenticators/:id`, `PUT ${MGMT}/authenticators/:id`, `PATCH ${MGMT}/authenticators/:id`, `DELETE ${MGMT}/authenticators/:id`,
      `GET ${MGMT}/identity-types`, `GET ${MGMT}/identity-types/:id`, `GET ${MGMT}/identities/:id/authenticators`,
    ]));
    const before = (await c.call('GET', `${MGMT}/identities?limit=1`, { token: admin })).body.meta.pagination.totalCount;
    for (const r of routes) {
      const url = r.url.replace(/:\w+/g, 'some-id');
      const body = ['POST', 'PUT', 'PATCH'].includes(r.method) ? { name: 'sneaky', type: 'User', isAdmin: true } : undefined;
      expectError(await c.call(r.method, url, { token: user, body }), 401, 'UNAUTHORIZED');
      expectError(await c.call(r.method, url, { body }), 401, 'UNAUTHORIZED');
    }
    expect((await c.call('GET', `${MGMT}/identities?limit=1`, { token: admin })).body.meta.pagination.totalCount).toBe(before);
  });
});
