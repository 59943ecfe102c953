// Whatever filter text arrives, the answer is a 200 or a 400 with the error envelope: never a 500.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name: 'fuzz-1', type: 'User', isAdmin: false, roleAttributes: ['a'], tags: { env: 'x' } } });
});
afterAll(() => c.close());

const SEEDS = [
  'name contains "web" and tags.env = "prod" sort by name desc skip 10 limit 5',
  'anyOf(roleAttributes) in ["a", "b"] or not isAdmin',
  'createdAt between datetime(2020-01-01T00:00:00Z) and datetime(2030-01-01T00:00:00Z)',
  'count(roleAttributes) >= 1 and isEmpty(roleAttributes) = false',
  'externalId = null and defaultHostingCost not in [1, 2] limit none',
  "('name' icontains \"FU\") and type != \"Device\"",
];
const ALPHABET = [...'abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789()[],."\'\\=!<>-+:#@$%^&*_/?~`\t\n', 'and', 'or', 'not', 'sort by', 'limit', 'skip', 'in', 'between', 'datetime(', 'anyOf(', 'null', 'true', '\u0000', '\u00e9', '\ud83d\ude00'];

const mutate = fc.tuple(fc.constantFrom(...SEEDS), fc.array(fc.tuple(fc.nat(), fc.nat(), fc.constantFrom(...ALPHABET), fc.constantFrom('insert', 'delete', 'replace')), { minLength: 1, maxLength: 6 })).map(([seed, edits]) => {
  let t = seed;
  for (const [at, len, piece, op] of edits) {
    const i = at % (t.length + 1);
    if (op === 'insert') t = t.slice(0, i) + piece + t.slice(i);
    else if (op === 'delete') t = t.slice(0, i) + t.slice(i + (len % 8) + 1);
    else t = t.slice(0, i) + piece + t.slice(i + piece.length);
  }
  return t;
});
const random = fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.array(fc.constantFrom(...ALPHABET), { maxLength: 30 }).map((a) => a.join(' ')));

/** Percent-encode the UTF-8 bytes, so text that encodeURIComponent refuses (lone surrogates) still goes out. */
const enc = (t: string) => [...Buffer.from(t, 'utf8')].map((b) => '%' + b.toString(16).padStart(2, '0')).join('');

describe('filter fuzzing', () => {
  it('answers thousands of random and mutated filters with 200 or an enveloped 400', async () => {
    const seen = { ok: 0, bad: 0 };
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutate, random), async (filter) => {
        const r = await c.call('GET', `${MGMT}/identities?filter=${enc(filter)}`, { token: admin });
        if (r.status === 200) {
          seen.ok++;
          expect(Array.isArray(r.body.data)).toBe(true);
          expect(r.body.meta.pagination.totalCount).toBeGreaterThanOrEqual(r.body.data.length);
        } else {
          seen.bad++;
          expect(r.status, `${JSON.stringify(filter)} -> ${r.text}\n${c.errors.join('')}`).toBe(400);
          expect(['INVALID_FILTER', 'INVALID_SORT_IDENTIFIER', 'INVALID_PAGINATION', 'COULD_NOT_VALIDATE', 'INVALID_FIELD']).toContain(r.body.error.code);
          expect(r.body.error.message.length).toBeGreaterThan(10);
          expect(r.body.error.requestId).toBeTruthy();
        }
      }),
      { numRuns: Number(process.env.FILTER_FUZZ_RUNS ?? 5000) },
    );
    expect(seen.ok).toBeGreaterThan(50);
    expect(seen.bad).toBeGreaterThan(500);
  }, 120_000);

  it('survives pathological sizes', async () => {
    const huge = Array.from({ length: 300 }, (_, i) => `name = "${i}"`).join(' or ');
    const r1 = await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent(huge)}`, { token: admin });
    expect(r1.status).toBe(400);
    expect(r1.body.error.message).toMatch(/more than 200 conditions|more than 4096 characters/);
    const deep = '('.repeat(2000) + 'true' + ')'.repeat(2000);
    expect((await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent(deep)}`, { token: admin })).status).toBe(400);
    const many = Array.from({ length: 150 }, (_, i) => `name = "${i}"`).join(' or ');
    expect((await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent(many)}`, { token: admin })).status).toBe(200);
  });
});
