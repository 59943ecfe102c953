// POST/GET /revocations (upstream 2.x, edge API 0.28.1+): created by an admin with {id, type, tags}, with
// upstream's expiry (now + the longest token lifetime, 24 h), replaced when the same id is revoked again,
// and taking effect on what is live: an API session revoked, or all of an identity's, ends as a DELETE
// ends it; a JTI naming a service session ends that session.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRevoked } from '../../src/model/auth/revocations.js';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
let user: string;

const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });
const sessionOf = async (token: string) => (await c.call('GET', `${CLIENT}/current-api-session`, { token })).body.data as { id: string };
const alive = async (token: string) => (await c.call('GET', `${CLIENT}/current-api-session`, { token })).status === 200;

beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  user = await c.user('rev-user');
});
afterAll(() => c.close());

describe('POST /revocations', () => {
  it('API_SESSION: ends that API session at once, and is listed with upstream\'s expiry', async () => {
    const token = await c.login('rev-user', 'password1');
    const other = await c.login('rev-user', 'password1');
    const { id } = await sessionOf(token);
    const made = await mg('POST', '/revocations', { id, type: 'API_SESSION', tags: { why: 'lost laptop' } });
    expect(made.status, made.text).toBe(201);
    expect(made.body.data).toMatchObject({ id, _links: { self: { href: `./revocations/${id}` } } });
    expect(await alive(token)).toBe(false);
    expect(await alive(other)).toBe(true);
    expectError(await mg('GET', `/api-sessions/${id}`), 404);
    const detail = (await mg('GET', `/revocations/${id}`)).body.data;
    expect(detail).toMatchObject({ id, type: 'API_SESSION', tags: { why: 'lost laptop' } });
    // Upstream: now + the longest OIDC token lifetime (the refresh token's 24 h by default).
    expect(Date.parse(detail.expiresAt) - Date.parse(detail.createdAt)).toBe(24 * 3_600_000);
    const listed = await mg('GET', `/revocations?filter=${encodeURIComponent('type = "API_SESSION"')}`);
    expect(listed.body.data.map((r: { id: string }) => r.id)).toEqual([id]);
    expect(listed.body.meta.filterableFields).toEqual(expect.arrayContaining(['type', 'expiresAt', 'issuedBefore']));
    // Recorded: the revocation, and the API session it ended, with the reason.
    const audit = (await mg('GET', `/audit-events?types=entityChange&entity=${id}&limit=10`)).body.data as { entityType: string; eventType: string }[];
    expect(audit.map((e) => `${e.entityType} ${e.eventType}`)).toEqual(expect.arrayContaining(['revocations created', 'apiSessions deleted']));
  });

  it('IDENTITY: ends every API session the identity made up to now; a later login works', async () => {
    const a = await c.login('rev-user', 'password1');
    const b = await c.login('rev-user', 'password1');
    const mine = await c.login();
    expect((await mg('POST', '/revocations', { id: user, type: 'IDENTITY' })).status).toBe(201);
    expect(await alive(a)).toBe(false);
    expect(await alive(b)).toBe(false);
    expect(await alive(mine)).toBe(true);
    const later = await c.login('rev-user', 'password1');
    expect(await alive(later)).toBe(true);
    // Tokens of the identity issued up to the revocation count as revoked; later ones do not.
    const ctx = c.opened.ctx;
    const at = Date.parse((await mg('GET', `/revocations/${user}`)).body.data.createdAt);
    expect(await isRevoked(ctx, { identityId: user, issuedAt: new Date(at - 60_000) })).toBe(true);
    expect(await isRevoked(ctx, { identityId: user, issuedAt: new Date(at + 2_000) })).toBe(false);
    // An unknown identity is 404, as upstream answers.
    expectError(await mg('POST', '/revocations', { id: 'no-such-identity', type: 'IDENTITY' }), 404);
  });

  it('IDENTITY again replaces the revocation and leaves the identity\'s role attributes and tags alone (the index is by id, shared with the identity)', async () => {
    const id = (await mg('POST', '/identities', { name: 'rev-roles', type: 'Device', isAdmin: false, roleAttributes: ['rev-role'], tags: { team: 'ops' } })).body.data.id as string;
    expect((await mg('POST', '/revocations', { id, type: 'IDENTITY', tags: { why: 'first' } })).status).toBe(201);
    expect((await mg('POST', '/revocations', { id, type: 'IDENTITY', tags: { why: 'again' } })).status).toBe(201);
    expect((await mg('GET', `/revocations/${id}`)).body.data.tags).toEqual({ why: 'again' });
    // A policy made now still selects it by its attribute, and a filter on its tag still finds it.
    const policy = (await mg('POST', '/service-policies', { name: 'rev-roles-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#rev-role'], serviceRoles: [] })).body.data.id as string;
    expect((await mg('GET', `/service-policies/${policy}/identities`)).body.data.map((i: { id: string }) => i.id)).toEqual([id]);
    expect((await mg('GET', `/identities?filter=${encodeURIComponent('tags.team = "ops"')}`)).body.data.map((i: { id: string }) => i.id)).toEqual([id]);
  });

  it('JTI: ends the API session or the service session its id names; any UUID is taken', async () => {
    const token = await c.login('rev-user', 'password1');
    const { id } = await sessionOf(token);
    expect((await mg('POST', '/revocations', { id, type: 'JTI' })).status).toBe(201);
    expect(await alive(token)).toBe(false);
    const jti = randomUUID();
    expect((await mg('POST', '/revocations', { id: jti, type: 'JTI' })).status).toBe(201);
    expect(await isRevoked(c.opened.ctx, { jti })).toBe(true);
    expect(await isRevoked(c.opened.ctx, { jti: randomUUID() })).toBe(false);
    // A service session, by its id.
    const db = c.opened.ctx.store.db;
    const s2 = await c.login('rev-user', 'password1');
    const owner = await sessionOf(s2);
    const svc = (await mg('POST', '/services', { name: 'rev-svc', encryptionRequired: true })).body.data.id;
    const now = new Date().toISOString();
    await db.insertInto('sessions').values({ id: 'svcsession1', createdAt: now, updatedAt: now, tags: '{}', apiSessionId: owner.id, identityId: user, serviceId: svc, type: 'Dial', tokenHash: 'x', tokenSealed: null } as never).execute();
    expect((await mg('POST', '/revocations', { id: 'svcsession1', type: 'JTI' })).status).toBe(201);
    expect(await db.selectFrom('sessions').select('id').where('id', '=', 'svcsession1').executeTakeFirst()).toBeUndefined();
    expect(await alive(s2)).toBe(true);
  });

  it('refuses ids that name nothing revocable and types it does not know', async () => {
    const bad = expectError(await mg('POST', '/revocations', { id: 'not-a-uuid', type: 'API_SESSION' }), 400, 'COULD_NOT_VALIDATE');
    expect(bad.cause.field).toBe('id');
    expectError(await mg('POST', '/revocations', { id: randomUUID(), type: 'SOMETHING' }), 400);
    expectError(await mg('POST', '/revocations', { type: 'JTI' }), 400);
    expectError(await mg('POST', '/revocations', { id: randomUUID() }), 400);
  });

  it('replaces an earlier revocation of the same id (upstream\'s CreateOrReplace)', async () => {
    const id = randomUUID();
    expect((await mg('POST', '/revocations', { id, type: 'JTI', tags: { n: '1' } })).status).toBe(201);
    c.clock.advance(60_000);
    expect((await mg('POST', '/revocations', { id, type: 'API_SESSION', tags: { n: '2' } })).status).toBe(201);
    const rows = (await mg('GET', `/revocations?filter=${encodeURIComponent(`id = "${id}"`)}`)).body.data;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ type: 'API_SESSION', tags: { n: '2' } });
  });

  it('are for admins only, counted by /summary, and forgotten once expired', async () => {
    const token = await c.login('rev-user', 'password1');
    expectError(await c.call('GET', `${MGMT}/revocations`, { token }), 401);
    expectError(await c.call('POST', `${MGMT}/revocations`, { token, body: { id: randomUUID(), type: 'JTI' } }), 401);
    const count = (await mg('GET', '/summary')).body.data.revocations as number;
    expect(count).toBeGreaterThan(3);
    const jti = randomUUID();
    await mg('POST', '/revocations', { id: jti, type: 'JTI' });
    c.clock.advance(25 * 3_600_000);
    expect(await isRevoked(c.opened.ctx, { jti })).toBe(false);
    const { expireApiSessions } = await import('../../src/model/auth/api-sessions.js');
    await expireApiSessions(c.opened.ctx);
    admin = await c.login();
    expect((await mg('GET', '/summary')).body.data.revocations).toBe(0);
  });

  it('are in the management OpenAPI document with upstream\'s operation ids', async () => {
    const doc = JSON.parse((await c.call('GET', `${MGMT}/specs/edge-management/spec`)).body.data);
    expect(doc.paths[`${MGMT}/revocations`].get.operationId).toBe('listRevocations');
    expect(doc.paths[`${MGMT}/revocations`].post.operationId).toBe('createRevocation');
    expect(doc.paths[`${MGMT}/revocations/{id}`].get.operationId).toBe('detailRevocation');
  });
});
