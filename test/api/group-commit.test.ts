// Concurrent writes share transactions on SQLite (store/group-commit.ts): every write that succeeds is
// stored, and one that fails (here a duplicate name) fails alone, with its own 400, inside a group.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController({ config: { authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 } });
  admin = await c.login();
});
afterAll(() => c.close());

describe('concurrent creates', () => {
  it('store every good write and refuse only the bad ones', async () => {
    // 30 names, each sent twice, plus writes that fail inside the transaction (an unknown auth policy).
    const bodies = [
      ...Array.from({ length: 60 }, (_, i) => ({ name: `gc-${i % 30}`, type: 'Device', isAdmin: false, roleAttributes: [`gc${i % 3}`] })),
      ...Array.from({ length: 5 }, (_, i) => ({ name: `gc-bad-${i}`, type: 'Device', isAdmin: false, authPolicyId: 'no-such-policy' })),
    ];
    const results = await Promise.all(bodies.map((body) => c.call('POST', `${MGMT}/identities`, { token: admin, body })));
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBe(30);
    for (const r of results.filter((x) => x.status !== 201)) expect(r.status).toBe(400);
    expect(results.slice(60).every((r) => r.status === 400)).toBe(true);
    const dup = results.find((r, i) => i < 60 && r.status !== 201)!;
    expect(expectError(dup, 400, 'COULD_NOT_VALIDATE').cause.field).toBe('name');
    const listed = await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name contains "gc-"')}&limit=100`, { token: admin });
    expect(listed.body.data.map((d: { name: string }) => d.name).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `gc-${i}`).sort());
    expect(new Set(listed.body.data.map((d: { id: string }) => d.id))).toEqual(new Set(created.map((r) => r.body.data.id)));
    // Their role attributes were indexed with them: the roles list sees all three.
    const roles = await c.call('GET', `${MGMT}/identity-role-attributes?filter=${encodeURIComponent('id contains "gc"')}`, { token: admin });
    expect([...roles.body.data].sort()).toEqual(['gc0', 'gc1', 'gc2']);
  });
});
