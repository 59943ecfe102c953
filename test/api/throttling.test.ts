// Throttling: a login flood from one address gets 429 with the error envelope while the server keeps
// answering; API requests are counted per API session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let token: string;
beforeAll(async () => {
  c = await startTestController({ config: { authRateLimitPerMinute: 8, apiRateLimitPerMinute: 25 } });
  token = await c.login();
});
afterAll(() => c.close());

describe('throttling', () => {
  it('answers a login flood with 429 and stays responsive', async () => {
    const flood = await Promise.all(Array.from({ length: 40 }, () => c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: ADMIN.username, password: 'wrong-password' } })));
    const statuses = flood.map((r) => r.status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(30);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    const limited = flood.find((r) => r.status === 429)!;
    expect(expectError(limited, 429, 'RATE_LIMITED').message).toMatch(/try again/);
    // Still responsive: informational routes are not throttled, and an existing session works.
    expect((await c.call('GET', '/version')).status).toBe(200);
    expect((await c.call('GET', `${CLIENT}/current-identity`, { token })).status).toBe(200);
    // Until the minute is over, even the right password waits.
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: ADMIN }), 429);
  });

  it('counts API requests per API session', async () => {
    const results = [];
    for (let i = 0; i < 30; i++) results.push((await c.call('GET', `${MGMT}/identities`, { token })).status);
    expect(results.slice(0, 20).every((s) => s === 200)).toBe(true);
    expect(results.at(-1)).toBe(429);
  });
});
