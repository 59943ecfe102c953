import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';
import { selfSignedCert } from '../helpers/certs.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const identity = async (name: string) => (await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'User', isAdmin: false } })).body.data.id as string;
const loginStatus = async (username: string, password: string) =>
  (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username, password } })).status;

describe('admin authenticators', () => {
  it('creates a updb authenticator that logs in, and keeps only a hash', async () => {
    const id = await identity('alice');
    const r = await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: 'alice', password: 'alice-pass' } });
    expect(r.status).toBe(201);
    const aid = r.body.data.id;
    const detail = (await c.call('GET', `${MGMT}/authenticators/${aid}`, { token: admin })).body.data;
    expect(detail).toMatchObject({ id: aid, method: 'updb', username: 'alice', identityId: id, identity: { id, name: 'alice' }, isIssuedByNetwork: false });
    expect(detail).not.toHaveProperty('password');
    expect(detail).not.toHaveProperty('passwordHash');
    expect(await loginStatus('alice', 'alice-pass')).toBe(200);
    const row = await c.opened.ctx.store.db.selectFrom('authenticators').selectAll().where('id', '=', aid).executeTakeFirstOrThrow();
    expect(row.passwordHash).toMatch(/^scrypt\$/);
    expect(row.passwordHash).not.toContain('alice-pass');
    // The identity shows it.
    expect((await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data.authenticators.updb).toEqual({ id: aid, username: 'alice' });
    const listed = await c.call('GET', `${MGMT}/identities/${id}/authenticators`, { token: admin });
    expect(listed.body.data.map((a: { id: string }) => a.id)).toEqual([aid]);
  });

  it('takes the lengths the document allows: any username and password on create, 4-100 and 5-100 on change', async () => {
    // Upstream answers 201 to each of these; the document gives create's fields no length limits.
    const short = await identity('short-names');
    const three = await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: short, method: 'updb', username: 'abc', password: 'abcd' } });
    expect(three.status).toBe(201);
    expect((await c.call('GET', `${MGMT}/authenticators/${three.body.data.id}`, { token: admin })).body.data.username).toBe('abc');
    const long = await identity('long-names');
    const username = 'u'.repeat(101);
    const longMade = await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: long, method: 'updb', username, password: 'p'.repeat(101) } });
    expect(longMade.status).toBe(201);
    expect((await c.call('GET', `${MGMT}/authenticators/${longMade.body.data.id}`, { token: admin })).body.data.username).toBe(username);
    // Logging in goes through the document's authenticate body (username 4-100, password 5-100), as upstream.
    expect(await loginStatus('abc', 'abcd')).toBe(400);
    // Replace and patch carry the document's limits.
    expectError(await c.call('PUT', `${MGMT}/authenticators/${three.body.data.id}`, { token: admin, body: { username: 'abc', password: 'abcde' } }), 400);
    expectError(await c.call('PATCH', `${MGMT}/authenticators/${three.body.data.id}`, { token: admin, body: { password: 'abcd' } }), 400);
    expect((await c.call('PATCH', `${MGMT}/authenticators/${three.body.data.id}`, { token: admin, body: { password: 'abcde' } })).status).toBe(200);
    // Empty is still refused, and an unbounded username is not taken into the unique index.
    const empty = await identity('empty-names');
    expectError(await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: empty, method: 'updb', username: '', password: 'x' } }), 400);
    expectError(await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: empty, method: 'updb', username: 'x'.repeat(5000), password: 'x' } }), 400);
    // Identity create takes any updb enrollment username, as upstream (its CLI: `create identity bob --updb bob`); not an empty one.
    expect((await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'enroll-short', type: 'Default', isAdmin: false, enrollment: { updb: 'bob' } } })).status).toBe(201);
    expectError(await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'enroll-empty', type: 'Default', isAdmin: false, enrollment: { updb: '' } } }), 400);
  });

  it('replaces, patches and deletes', async () => {
    const id = await identity('bob');
    const aid = (await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: 'bob1', password: 'bob-pass-1' } })).body.data.id;
    expect((await c.call('PUT', `${MGMT}/authenticators/${aid}`, { token: admin, body: { username: 'bob2', password: 'bob-pass-2' } })).status).toBe(200);
    expect(await loginStatus('bob1', 'bob-pass-1')).toBe(401);
    expect(await loginStatus('bob2', 'bob-pass-2')).toBe(200);
    expect((await c.call('PATCH', `${MGMT}/authenticators/${aid}`, { token: admin, body: { password: 'bob-pass-3' } })).status).toBe(200);
    expect(await loginStatus('bob2', 'bob-pass-2')).toBe(401);
    expect(await loginStatus('bob2', 'bob-pass-3')).toBe(200);
    expect((await c.call('DELETE', `${MGMT}/authenticators/${aid}`, { token: admin })).status).toBe(200);
    expect(await loginStatus('bob2', 'bob-pass-3')).toBe(401);
    expectError(await c.call('GET', `${MGMT}/authenticators/${aid}`, { token: admin }), 404, 'NOT_FOUND');
  });

  it('creates a cert authenticator from a real certificate', async () => {
    const id = await identity('carol');
    const { certPem } = selfSignedCert('carol');
    const r = await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: id, method: 'cert', certPem } });
    expect(r.status).toBe(201);
    const detail = (await c.call('GET', `${MGMT}/authenticators/${r.body.data.id}`, { token: admin })).body.data;
    expect(detail.method).toBe('cert');
    expect(detail.fingerprint).toMatch(/^[0-9a-f]{40}$/);
    expect(detail.certPem).toBe(certPem);
    expect(detail.isIssuedByNetwork).toBe(false);
    const other = await identity('carol-2');
    expectError(await c.call('POST', `${MGMT}/authenticators`, { token: admin, body: { identityId: other, method: 'cert', certPem } }), 409, 'CERT_IN_USE');
    expectError(await c.call('PUT', `${MGMT}/authenticators/${r.body.data.id}`, { token: admin, body: { username: 'carol', password: 'whatever' } }), 409, 'CANNOT_UPDATE_AUTHENTICATOR');
  });

  it('refuses what does not fit the method', async () => {
    const id = await identity('dave');
    const post = (body: unknown) => c.call('POST', `${MGMT}/authenticators`, { token: admin, body });
    expectError(await post({ identityId: id, method: 'updb', username: 'dave', password: 'dave-pass', certPem: 'x' }), 400, 'INVALID_AUTHENTICATOR_PROPERTIES');
    expectError(await post({ identityId: id, method: 'cert', username: 'dave' }), 400, 'INVALID_AUTHENTICATOR_PROPERTIES');
    expect(expectError(await post({ identityId: id, method: 'updb', username: 'dave' }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('password');
    expect(expectError(await post({ identityId: id, method: 'updb', username: '', password: 'dave-pass' }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('username');
    expect(expectError(await post({ identityId: id, method: 'updb', username: 'dave', password: '' }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('password');
    expect(expectError(await post({ identityId: id, method: 'otp', username: 'dave', password: 'dave-pass' }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('method');
    expectError(await post({ identityId: id, method: 'cert', certPem: 'not a certificate' }), 400, 'COULD_NOT_PARSE_BODY');
    // As upstream: an unknown identity is 404.
    expectError(await post({ identityId: 'nope', method: 'updb', username: 'dave', password: 'dave-pass' }), 404, 'NOT_FOUND');
    expect(expectError(await post({ identityId: id, method: 'updb', username: 'admin', password: 'dave-pass' }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('username');
    expect((await post({ identityId: id, method: 'updb', username: 'dave', password: 'dave-pass' })).status).toBe(201);
    expectError(await post({ identityId: id, method: 'updb', username: 'dave-2', password: 'dave-pass' }), 409, 'MAX_AUTHENTICATOR_METHODS_REACHED');
    const count = await c.opened.ctx.store.db.selectFrom('authenticators').select((eb) => eb.fn.countAll().as('n')).where('identityId', '=', id).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });

  it('removes authenticators with their identity', async () => {
    const id = await c.user('erin');
    expect((await c.call('DELETE', `${MGMT}/identities/${id}`, { token: admin })).status).toBe(200);
    expect(await c.opened.ctx.store.db.selectFrom('authenticators').select('id').where('identityId', '=', id).execute()).toEqual([]);
    expect(await loginStatus('erin', 'password1')).toBe(401);
  });
});

describe('own authenticators (client API)', () => {
  it('lists and reads only the caller’s own', async () => {
    await c.user('frank');
    await c.user('grace');
    const frank = await c.login('frank', 'password1');
    const mine = await c.call('GET', `${CLIENT}/current-identity/authenticators`, { token: frank });
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((a: { username: string }) => a.username)).toEqual(['frank']);
    expect(mine.body.meta.pagination.totalCount).toBe(1);
    const graceAuth = (await c.call('GET', `${MGMT}/authenticators?filter=${encodeURIComponent('username = "grace"')}`, { token: admin })).body.data[0].id;
    expectError(await c.call('GET', `${CLIENT}/current-identity/authenticators/${graceAuth}`, { token: frank }), 404, 'NOT_FOUND');
    expectError(await c.call('PATCH', `${CLIENT}/current-identity/authenticators/${graceAuth}`, { token: frank, body: { password: 'stolen-1', currentPassword: 'password1' } }), 404, 'NOT_FOUND');
    expect(await loginStatus('grace', 'password1')).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity/authenticators/${mine.body.data[0].id}`, { token: frank })).body.data.username).toBe('frank');
  });

  it('changes the password only with the current one', async () => {
    await c.user('heidi');
    const token = await c.login('heidi', 'password1');
    const aid = (await c.call('GET', `${CLIENT}/current-identity/authenticators`, { token })).body.data[0].id;
    expectError(await c.call('PATCH', `${CLIENT}/current-identity/authenticators/${aid}`, { token, body: { password: 'new-pass-1', currentPassword: 'wrong-pass' } }), 401, 'UNAUTHORIZED');
    expect(expectError(await c.call('PATCH', `${CLIENT}/current-identity/authenticators/${aid}`, { token, body: { password: 'new-pass-1' } }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('currentPassword');
    expect(await loginStatus('heidi', 'password1')).toBe(200);
    expect((await c.call('PATCH', `${CLIENT}/current-identity/authenticators/${aid}`, { token, body: { password: 'new-pass-1', currentPassword: 'password1' } })).status).toBe(200);
    expect(await loginStatus('heidi', 'password1')).toBe(401);
    expect(await loginStatus('heidi', 'new-pass-1')).toBe(200);
    expect((await c.call('PUT', `${CLIENT}/current-identity/authenticators/${aid}`, { token, body: { username: 'heidi-2', password: 'new-pass-2', currentPassword: 'new-pass-1' } })).status).toBe(200);
    expect(await loginStatus('heidi-2', 'new-pass-2')).toBe(200);
    expect(expectError(await c.call('PUT', `${CLIENT}/current-identity/authenticators/${aid}`, { token, body: { password: 'new-pass-3', currentPassword: 'new-pass-2' } }), 400, 'COULD_NOT_VALIDATE').cause.field).toBe('username');
  });
});

describe('a credential taken away ends the API sessions it opened', () => {
  const alive = async (token: string) => (await c.call('GET', `${CLIENT}/current-api-session`, { token })).status;
  const updbOf = async (name: string) =>
    (await c.call('GET', `${MGMT}/authenticators?filter=${encodeURIComponent(`username = "${name}"`)}`, { token: admin })).body.data[0].id as string;

  it('deleting the authenticator ends its sessions at once, and only its own', async () => {
    await c.user('ivan');
    await c.user('judy');
    const [s1, s2] = [await c.login('ivan', 'password1'), await c.login('ivan', 'password1')];
    const other = await c.login('judy', 'password1');
    expect(await alive(s1)).toBe(200);
    expect((await c.call('DELETE', `${MGMT}/authenticators/${await updbOf('ivan')}`, { token: admin })).status).toBe(200);
    expectError(await c.call('GET', `${CLIENT}/current-api-session`, { token: s1 }), 401);
    expect(await alive(s2)).toBe(401);
    expect(await alive(other)).toBe(200);
  });

  it('an admin changing the password ends every session it opened; a username change alone ends none', async () => {
    await c.user('karl');
    const s = await c.login('karl', 'password1');
    const aid = await updbOf('karl');
    expect((await c.call('PATCH', `${MGMT}/authenticators/${aid}`, { token: admin, body: { username: 'karl-2' } })).status).toBe(200);
    expect(await alive(s)).toBe(200);
    expect((await c.call('PATCH', `${MGMT}/authenticators/${aid}`, { token: admin, body: { password: 'changed-1' } })).status).toBe(200);
    expect(await alive(s)).toBe(401);
    const s2 = await c.login('karl-2', 'changed-1');
    expect((await c.call('PUT', `${MGMT}/authenticators/${aid}`, { token: admin, body: { username: 'karl-2', password: 'changed-2' } })).status).toBe(200);
    expect(await alive(s2)).toBe(401);
  });

  it('changing your own password ends your other sessions and keeps the one that made the change', async () => {
    await c.user('lena');
    const here = await c.login('lena', 'password1');
    const elsewhere = await c.login('lena', 'password1');
    const aid = (await c.call('GET', `${CLIENT}/current-identity/authenticators`, { token: here })).body.data[0].id;
    expect((await c.call('PATCH', `${CLIENT}/current-identity/authenticators/${aid}`, { token: here, body: { password: 'new-pass-1', currentPassword: 'password1' } })).status).toBe(200);
    expect(await alive(here)).toBe(200);
    expect(await alive(elsewhere)).toBe(401);
  });

  it('re-enrolling the authenticator ends its sessions', async () => {
    await c.user('mona');
    const s = await c.login('mona', 'password1');
    const r = await c.call('POST', `${MGMT}/authenticators/${await updbOf('mona')}/re-enroll`, { token: admin, body: { expiresAt: new Date(c.clock.now().getTime() + 3_600_000).toISOString() } });
    expect(r.status, r.text).toBe(201);
    expect(await alive(s)).toBe(401);
  });
});
