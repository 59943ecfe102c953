// Password guessing: a budget per account whatever the address, a sliding window per address, and
// password hashing bounded so a login flood cannot take the whole machine.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { BASE_DELAY_MS, FREE_ATTEMPTS } from '../../src/model/auth/login-budget.js';
import { HASH_QUEUE } from '../../src/model/auth/hash-slots.js';
import { DEFAULT_HASH_COST } from '../../src/model/auth/password.js';
import { CLIENT, expectError, startTestController, type TestController } from '../helpers/controller.js';

const login = (c: TestController, username: string, password: string, from = '127.0.0.1') =>
  c.app.inject({ method: 'POST', url: `${CLIENT}/authenticate?method=password`, remoteAddress: from, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ username, password }) });
const json = (r: { statusCode: number; body: string }) => ({ status: r.statusCode, body: JSON.parse(r.body) });

describe('the per-account budget', () => {
  let c: TestController;
  beforeAll(async () => {
    // No per-address limit: the budget alone must hold.
    c = await startTestController({ config: { authRateLimitPerMinute: 0 } });
    await c.user('victim', { password: 'right-pass-1' });
    await c.user('bystander', { password: 'right-pass-2' });
  });
  afterAll(() => c.close());

  it('after 10 failures from any addresses, makes the account wait, doubling each time, and forgets on success', async () => {
    for (let i = 0; i < FREE_ATTEMPTS; i++) expect((await login(c, 'victim', `wrong-${i}`, `10.0.0.${i}`)).statusCode).toBe(401);
    // The 11th attempt waits, from a new address and even with the right password.
    const refused = await login(c, 'victim', 'right-pass-1', '10.9.9.9');
    expect(expectError(json(refused), 429, 'RATE_LIMITED').message).toMatch(/failed logins for this username/);
    expect(refused.headers['retry-after']).toBe(String(BASE_DELAY_MS / 1000));
    // Other accounts are not affected.
    expect((await login(c, 'bystander', 'right-pass-2')).statusCode).toBe(200);
    // After the delay one attempt may go; the next delay is twice as long.
    c.clock.advance(BASE_DELAY_MS);
    expect((await login(c, 'victim', 'wrong-again')).statusCode).toBe(401);
    expect((await login(c, 'victim', 'right-pass-1')).headers['retry-after']).toBe(String((2 * BASE_DELAY_MS) / 1000));
    c.clock.advance(2 * BASE_DELAY_MS - 1);
    expect((await login(c, 'victim', 'right-pass-1')).statusCode).toBe(429);
    c.clock.advance(1);
    // The right password then logs in and makes the budget whole.
    expect((await login(c, 'victim', 'right-pass-1')).statusCode).toBe(200);
    for (let i = 0; i < FREE_ATTEMPTS; i++) expect((await login(c, 'victim', `wrong-${i}`)).statusCode).toBe(401);
    expect((await login(c, 'victim', 'wrong')).statusCode).toBe(429);
  });

  it('counts waits on a monotonic clock: stepping the wall clock back a day changes nothing', async () => {
    for (let i = 0; i < FREE_ATTEMPTS; i++) expect((await login(c, 'stepped', `wrong-${i}`)).statusCode).toBe(401);
    const wall = c.clock.now().getTime();
    c.clock.set(wall - 86_400_000);
    const refused = await login(c, 'stepped', 'wrong');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe(String(BASE_DELAY_MS / 1000));
    c.clock.set(wall + 86_400_000);
    // A day ahead on the wall clock is not a day waited.
    expect((await login(c, 'stepped', 'wrong')).statusCode).toBe(429);
    c.clock.set(wall);
    c.clock.advance(BASE_DELAY_MS);
    expect((await login(c, 'stepped', 'wrong')).statusCode).toBe(401);
  });

  it('budgets unknown usernames the same way, so the answers do not tell which exist', async () => {
    for (let i = 0; i < FREE_ATTEMPTS; i++) expect((await login(c, 'nobody-here', `wrong-${i}`)).statusCode).toBe(401);
    expectError(json(await login(c, 'nobody-here', 'wrong')), 429, 'RATE_LIMITED');
  });

  it('counts a burst of concurrent guesses before any of them finishes', async () => {
    await c.user('burst', { password: 'right-pass-3' });
    const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => login(c, 'burst', `wrong-${i}`, `10.1.0.${i}`)));
    const statuses = burst.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 401).length).toBe(FREE_ATTEMPTS);
    expect(statuses.filter((s) => s === 429).length).toBe(30 - FREE_ATTEMPTS);
  });
});

describe('the per-address limit', () => {
  let c: TestController;
  beforeAll(async () => {
    c = await startTestController({ config: { authRateLimitPerMinute: 10 } });
  });
  afterAll(() => c.close());
  afterEach(() => {
    vi.useRealTimers();
  });

  it('slides: a run across the edge of a minute gets no more than the limit through', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t0 = Date.UTC(2030, 0, 1);
    vi.setSystemTime(t0);
    // Distinct usernames, so only the per-address limit is in play.
    let n = 0;
    const attempt = async () => (await login(c, `user-${n++}`, 'wrong-pass')).statusCode;
    expect(await attempt()).toBe(401);
    vi.setSystemTime(t0 + 58_000);
    const late: number[] = [];
    for (let i = 0; i < 10; i++) late.push(await attempt());
    vi.setSystemTime(t0 + 61_000);
    for (let i = 0; i < 10; i++) late.push(await attempt());
    // In the 3 seconds from 58 s to 61 s: a fixed window lets 9 + 10 through; a sliding one at most 10.
    expect(late.filter((s) => s === 401).length).toBeLessThanOrEqual(10);
    expect(late.filter((s) => s === 429).length).toBeGreaterThanOrEqual(10);
    // Once the minute has slid past, logins are served again.
    vi.setSystemTime(t0 + 125_000);
    expect(await attempt()).toBe(401);
  });
});

describe('password hashing under a flood', () => {
  let c: TestController;
  const suiteCost = process.env.ZTC_PASSWORD_HASH_COST;
  beforeAll(async () => {
    // At the cost a controller uses (the suite lowers it): the flood must outlast the slots.
    process.env.ZTC_PASSWORD_HASH_COST = String(DEFAULT_HASH_COST);
    c = await startTestController({ config: { authRateLimitPerMinute: 0 } });
  });
  afterAll(async () => {
    if (suiteCost === undefined) delete process.env.ZTC_PASSWORD_HASH_COST;
    else process.env.ZTC_PASSWORD_HASH_COST = suiteCost;
    await c.close();
  });

  it('runs a few hashes at a time, refuses what cannot wait, and keeps serving other requests', async () => {
    const total = HASH_QUEUE + 60;
    let settled = 0;
    const flood = Array.from({ length: total }, (_, i) => login(c, `flood-${i}`, 'wrong-pass').finally(() => settled++));
    // Other requests are answered while the logins wait their turn.
    expect((await c.call('GET', '/version')).status).toBe(200);
    expect(settled).toBeLessThan(total);
    const answers = await Promise.all(flood);
    const statuses = answers.map((r) => r.statusCode);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    const busy = answers.filter((r) => r.statusCode === 429);
    expect(busy.length).toBeGreaterThan(0);
    expect(expectError(json(busy[0]), 429, 'RATE_LIMITED').message).toMatch(/busy/);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(HASH_QUEUE);
  }, 120_000);
});
