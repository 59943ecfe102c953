// POST /import at size: its body is capped (importBodyLimitMb), a large import that fails near its end
// leaves nothing behind even though it lets other requests in while it runs (a write made meanwhile is
// kept), and a dry run lists the first PLAN_LISTED steps and counts the rest. Over real TLS.
// (Other clients' latency during a 100,000-identity import is measured by `BENCH_ONLY=import npm run bench`.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { PLAN_LISTED } from '../../src/model/import-model.js';
import { expectError, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController({ importBodyLimitMb: 1, apiRateLimitPerMinute: 0 });
  admin = await c.login();
});
afterAll(() => c.close());

const identities = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${String(i).padStart(5, '0')}`, type: 'Device', isAdmin: false, roleAttributes: ['bulk'] }));
const count = async (path: string) => (await c.call('GET', `${MGMT}${path}?limit=1`, { token: admin })).body.meta.pagination.totalCount as number;

describe('import at size', () => {
  it('caps the body at importBodyLimitMb (64 MiB unless configured), with the error envelope', async () => {
    expect(loadConfig({ dataDir: '/tmp/x' }, {}).importBodyLimitMb).toBe(64);
    const big = { ztcModel: 1, identities: identities(15_000, 'too-big') };
    expect(Buffer.byteLength(JSON.stringify(big))).toBeGreaterThan(1024 * 1024);
    const before = await count('/identities');
    const r = await c.call('POST', `${MGMT}/import`, { token: admin, body: big });
    expectError(r, 413);
    expect(await count('/identities')).toBe(before);
    // Under the cap it is taken.
    const small = await c.call('POST', `${MGMT}/import`, { token: admin, body: { ztcModel: 1, identities: identities(10, 'fits') } });
    expect(small.status, small.text).toBe(200);
    expect(await count('/identities')).toBe(before + 10);
  });

  it('stays all-or-nothing while it lets other requests in: a failure at the last item keeps none, a write made meanwhile stays', async () => {
    const before = await count('/identities');
    // Its body (120 KB) is over THREAD_MIN_BYTES, so it runs on the import's thread, its creates in batches.
    const items = identities(1_500, 'bulk');
    // Valid in shape, so planning passes; its auth policy does not exist, which only the write finds.
    items.push({ name: 'bulk-last', type: 'Device', isAdmin: false, roleAttributes: ['bulk'], authPolicy: 'no-such-policy' } as never);
    const importing = c.call('POST', `${MGMT}/import`, { token: admin, body: { ztcModel: 1, identities: items } });
    const other = await c.call('POST', `${MGMT}/services`, { token: admin, body: { name: 'made-meanwhile', encryptionRequired: true } });
    expect(other.status, other.text).toBe(201);
    const r = await importing;
    expect(expectError(r, 400, 'COULD_NOT_VALIDATE').message).toMatch(/identities\[1500\] 'bulk-last': .*no auth policy is named 'no-such-policy'/);
    expect(await count('/identities')).toBe(before);
    expect((await c.call('GET', `${MGMT}/services?filter=${encodeURIComponent('name = "made-meanwhile"')}`, { token: admin })).body.data).toHaveLength(1);
    // On SQLite the whole import runs on its thread at nice 10: on a loaded machine it waits for a core (47 s seen for 4,000).
  }, 120_000);

  it(`lists the first ${PLAN_LISTED} steps of a large plan and counts the rest`, async () => {
    const before = await count('/identities');
    const r = await c.call('POST', `${MGMT}/import?dryRun=true`, { token: admin, body: { ztcModel: 1, identities: identities(PLAN_LISTED + 500, 'planned') } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.applied).toBe(false);
    expect(r.body.data.plan).toHaveLength(PLAN_LISTED);
    expect(r.body.data.omitted).toBe(500);
    expect(r.body.data.counts).toEqual({ create: PLAN_LISTED + 500, update: 0, delete: 0 });
    expect(await count('/identities')).toBe(before);
    // Applied, it creates them all and answers in the same shape.
    const applied = await c.call('POST', `${MGMT}/import`, { token: admin, body: { ztcModel: 1, identities: identities(PLAN_LISTED + 500, 'planned') } });
    expect(applied.body.data).toMatchObject({ applied: true, omitted: 500, counts: { create: PLAN_LISTED + 500 } });
    expect(await count('/identities')).toBe(before + PLAN_LISTED + 500);
  });
});
