// Who is online (ziti#4376, issue 47 item 7): the identity list filtered and sorted by edge-router
// connection, as identity details report it (hasEdgeRouterConnection, edgeRouterConnectionStatus): an SDK
// (the test peer, with a real certificate) connected to the embedded edge router is online within the
// data plane's report (a second), and not once it leaves. Through the Management API over TLS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';

let n: TestNetwork;
let ana: Member;
let bo: Member;
beforeAll(async () => {
  n = await startNetwork();
  ana = await n.identity('online-ana');
  bo = await n.identity('online-bo');
}, 60_000);
afterAll(() => n?.close());

const names = async (filter: string) => {
  const r = await n.api('GET', `/identities?filter=${encodeURIComponent(filter)}`);
  expect(r.status, r.text).toBe(200);
  return (r.body.data as { name: string }[]).map((i) => i.name);
};

describe('identities by edge-router connection', () => {
  it('filter hasEdgeRouterConnection and edgeRouterConnectionStatus as the details show them', async () => {
    expect(await names('hasEdgeRouterConnection = true')).toEqual([]);
    const peer = await n.peer(ana);
    await expect.poll(() => names('hasEdgeRouterConnection = true'), { timeout: 4000 }).toEqual(['online-ana']);
    expect(await names('edgeRouterConnectionStatus = "online"')).toEqual(['online-ana']);
    expect(await names('hasEdgeRouterConnection')).toEqual(['online-ana']);
    // The rest: unknown (another controller sharing the database may hold them), and the and/or of other fields.
    const rest = await names('edgeRouterConnectionStatus = "unknown" and name contains "online-"');
    expect(rest).toEqual(['online-bo']);
    expect(await names('not hasEdgeRouterConnection and name contains "online-"')).toEqual(['online-bo']);
    expect(await names('hasEdgeRouterConnection = true and type = "Default"')).toEqual(['online-ana']);
    // Sorted: the connected first.
    expect(await names('name contains "online-" sort by hasEdgeRouterConnection desc, name')).toEqual(['online-ana', 'online-bo']);
    expect(await names('name contains "online-" sort by edgeRouterConnectionStatus desc, name')).toEqual(['online-bo', 'online-ana']);
    // Counted right, and the detail agrees.
    const page = await n.api('GET', `/identities?filter=${encodeURIComponent('hasEdgeRouterConnection = true')}&limit=1`);
    expect(page.body.meta.pagination.totalCount).toBe(1);
    expect((await n.api('GET', `/identities/${ana.id}`)).body.data).toMatchObject({ hasEdgeRouterConnection: true, edgeRouterConnectionStatus: 'online' });
    // A second SDK, then the first leaves.
    const other = await n.peer(bo);
    await expect.poll(() => names('hasEdgeRouterConnection = true sort by name'), { timeout: 4000 }).toEqual(['online-ana', 'online-bo']);
    peer.close();
    await expect.poll(() => names('hasEdgeRouterConnection = true'), { timeout: 4000 }).toEqual(['online-bo']);
    other.close();
    await expect.poll(() => names('edgeRouterConnectionStatus = "online"'), { timeout: 4000 }).toEqual([]);
  });

  it('refuses what the fields cannot be compared with', async () => {
    const bad = await n.api('GET', `/identities?filter=${encodeURIComponent('hasEdgeRouterConnection = "yes"')}`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_FILTER');
  });
});
