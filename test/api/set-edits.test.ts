// Our PATCH extension: roleAttributesAdd/Remove and tagsAdd/Remove change the current lists in one
// transaction, so concurrent edits by two admins both land; upstream's whole-list fields keep their meaning.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

describe('role attribute and tag edits (PATCH extension)', () => {
  let c: TestController;
  let token: string;
  const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token, body });

  beforeAll(async () => {
    c = await startTestController();
    token = await c.login();
  });
  afterAll(() => c.close());

  const kinds: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ['/identities', { type: 'User', isAdmin: false }, {}],
    ['/services', { encryptionRequired: true }, {}],
    ['/edge-routers', {}, {}],
    ['/posture-checks', { typeId: 'DOMAIN', domains: ['corp.example'] }, { typeId: 'DOMAIN' }],
  ];

  for (const [path, extra, patchExtra] of kinds) {
    it(`adds and removes role attributes and tags of ${path.slice(1)} without restating them`, async () => {
      const made = await mg('POST', path, { name: `x${path.slice(1)}`, roleAttributes: ['us', 'keep'], tags: { env: 'prod', team: 'a' }, ...extra });
      expect(made.status).toBe(201);
      const id = made.body.data.id;
      const r = await mg('PATCH', `${path}/${id}`, { roleAttributesAdd: ['eu', 'keep'], roleAttributesRemove: ['us', 'never-there'], tagsAdd: { team: 'b', owner: 'ops' }, tagsRemove: ['env'], ...patchExtra });
      expect(r.status).toBe(200);
      const got = (await mg('GET', `${path}/${id}`)).body.data;
      expect([...got.roleAttributes].sort()).toEqual(['eu', 'keep']);
      expect(got.tags).toEqual({ team: 'b', owner: 'ops' });

      // Only tags: role attributes stay as they are; only attributes: tags stay.
      expect((await mg('PATCH', `${path}/${id}`, { tagsRemove: ['owner'], ...patchExtra })).status).toBe(200);
      expect((await mg('PATCH', `${path}/${id}`, { roleAttributesRemove: ['keep'], ...patchExtra })).status).toBe(200);
      const after = (await mg('GET', `${path}/${id}`)).body.data;
      expect(after.roleAttributes).toEqual(['eu']);
      expect(after.tags).toEqual({ team: 'b' });

      // The attribute index follows: a role filter finds the entity by its new attribute, not its old one.
      expect((await mg('GET', `${path}?roleFilter=%23eu`)).body.data.map((e: { id: string }) => e.id)).toContain(id);
      expect((await mg('GET', `${path}?roleFilter=%23us`)).body.data.map((e: { id: string }) => e.id)).not.toContain(id);
    });
  }

  it('keeps policy membership in step with added and removed attributes', async () => {
    const svc = (await mg('POST', '/services', { name: 'member-svc', encryptionRequired: true })).body.data.id;
    const pol = (await mg('POST', '/service-policies', { name: 'eu-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#eu'], serviceRoles: [`@${svc}`] })).body.data.id;
    const who = (await mg('POST', '/identities', { name: 'member-1', type: 'User', isAdmin: false })).body.data.id;
    const members = async () => (await mg('GET', `/service-policies/${pol}/identities`)).body.data.map((e: { id: string }) => e.id);
    expect(await members()).not.toContain(who);
    await mg('PATCH', `/identities/${who}`, { roleAttributesAdd: ['eu'] });
    expect(await members()).toContain(who);
    await mg('PATCH', `/identities/${who}`, { roleAttributesRemove: ['eu'] });
    expect(await members()).not.toContain(who);
  });

  it('applies concurrent additions by different admins so that all of them win', async () => {
    const id = (await mg('POST', '/identities', { name: 'busy', type: 'User', isAdmin: false, roleAttributes: ['base'] })).body.data.id;
    const other = await c.login();
    const names = Array.from({ length: 12 }, (_, i) => `a${i}`);
    const results = await Promise.all(
      names.map((a, i) => c.call('PATCH', `${MGMT}/identities/${id}`, { token: i % 2 ? other : token, body: { roleAttributesAdd: [a], tagsAdd: { [a]: 'yes' } } })),
    );
    expect(results.map((r) => r.status)).toEqual(names.map(() => 200));
    const got = (await mg('GET', `/identities/${id}`)).body.data;
    expect([...got.roleAttributes].sort()).toEqual(['base', ...names].sort());
    expect(Object.keys(got.tags).sort()).toEqual([...names].sort());
  });

  it('rejects mixing a whole list with its edits, bad shapes and unknown ids with 4xx', async () => {
    const id = (await mg('POST', '/identities', { name: 'strict', type: 'User', isAdmin: false })).body.data.id;
    expectError(await mg('PATCH', `/identities/${id}`, { roleAttributes: ['a'], roleAttributesAdd: ['b'] }), 400, 'INVALID_FIELD');
    expectError(await mg('PATCH', `/identities/${id}`, { tags: {}, tagsRemove: ['b'] }), 400, 'INVALID_FIELD');
    expectError(await mg('PATCH', `/identities/${id}`, { roleAttributesAdd: 'eu' }), 400);
    expectError(await mg('PATCH', `/identities/${id}`, { roleAttributesAdd: [''] }), 400);
    expectError(await mg('PATCH', `/identities/${id}`, { tagsAdd: { k: { nested: 1 } } }), 400);
    expectError(await mg('PATCH', `/identities/${id}`, { tagsRemove: [3] }), 400);
    expectError(await mg('PATCH', '/identities/no-such-id', { roleAttributesAdd: ['eu'] }), 404, 'NOT_FOUND');
    // The extension is PATCH only: PUT keeps upstream's body, where the edit fields are undeclared, so
    // dropped as any undeclared field is (and PUT's own roleAttributes, left out, are none).
    await mg('PATCH', `/identities/${id}`, { roleAttributes: ['kept'] });
    expect((await mg('PUT', `/identities/${id}`, { name: 'strict', type: 'User', isAdmin: false, roleAttributesAdd: ['eu'] })).status).toBe(200);
    expect((await mg('GET', `/identities/${id}`)).body.data.roleAttributes).toEqual([]);
    // Upstream's whole-list field keeps replacing.
    await mg('PATCH', `/identities/${id}`, { roleAttributesAdd: ['one', 'two'] });
    await mg('PATCH', `/identities/${id}`, { roleAttributes: ['only'] });
    expect((await mg('GET', `/identities/${id}`)).body.data.roleAttributes).toEqual(['only']);
  });

  it('documents the extension in the OpenAPI document on the PATCH bodies', async () => {
    const spec = JSON.parse((await c.call('GET', `${MGMT}/specs/edge-management/spec`)).body.data);
    for (const p of ['identities', 'services', 'edge-routers', 'posture-checks']) {
      const body = spec.paths[`${MGMT}/${p}/{id}`].patch.requestBody.content['application/json'].schema;
      const props = body.properties ?? spec.components?.schemas?.[body.$ref?.split('/').pop()]?.properties;
      expect(Object.keys(props)).toEqual(expect.arrayContaining(['roleAttributes', 'tags', 'roleAttributesAdd', 'roleAttributesRemove', 'tagsAdd', 'tagsRemove']));
      expect(props.roleAttributesAdd.description).toMatch(/ztc extension/);
      const put = spec.paths[`${MGMT}/${p}/{id}`].put.requestBody.content['application/json'].schema;
      expect(Object.keys(put.properties ?? {})).not.toContain('roleAttributesAdd');
    }
  });
});
