// The routers a client is offered for a service, as upstream offers them (ListForIdentityAndService):
// every router the policies allow, enrolled or not, connected first, an offline one with no host name
// and no listener addresses (so an SDK does not dial what nobody answers); the current identity's own
// list stays to enrolled routers. A real controller with its embedded router online.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';

let n: TestNetwork;
let client: Member;
let service: string;
let spare: string;
beforeAll(async () => {
  n = await startNetwork();
  service = await n.service('offered');
  client = await n.identity('offered-client', ['offered-clients']);
  // A router the policies allow ('all' in the test network) that never enrolled, named to sort first.
  spare = (await n.api('POST', '/edge-routers', { name: 'a-spare', roleAttributes: ['spare'] })).body.data.id;
}, 60_000);
afterAll(() => n.close());

type Offered = { name: string; isOnline: boolean; hostname: string; supportedProtocols: Record<string, string>; urls: Record<string, string>; syncStatus: string };

describe('routers offered for a service', () => {
  it('a session lists every router the policies allow, the online one first, the offline one without addresses', async () => {
    const made = await n.c.call('POST', `${CLIENT}/sessions`, { token: client.token, body: { serviceId: service, type: 'Dial' } });
    expect(made.status, made.text).toBe(201);
    const routers = made.body.data.edgeRouters as Offered[];
    expect(routers.map((r) => r.isOnline)).toEqual([true, false]);
    expect(routers[0].supportedProtocols.tls).toMatch(/^tls:\/\//);
    expect(routers[0].urls).toEqual(routers[0].supportedProtocols);
    expect(routers[0].syncStatus).toBe('SYNC_DONE');
    expect(routers[1]).toMatchObject({ name: 'a-spare', isOnline: false, hostname: '', supportedProtocols: {}, urls: {}, syncStatus: 'SYNC_UNKNOWN' });
    // Read again by id: the same list.
    const again = (await n.c.call('GET', `${CLIENT}/sessions/${made.body.data.id}`, { token: client.token })).body.data.edgeRouters as Offered[];
    expect(again.map((r) => r.name)).toEqual(routers.map((r) => r.name));
  });

  it('/services/{id}/edge-routers lists the same; /current-identity/edge-routers only enrolled ones', async () => {
    const byService = (await n.c.call('GET', `${CLIENT}/services/${service}/edge-routers`, { token: client.token })).body.data.edgeRouters as Offered[];
    expect(byService.map((r) => [r.name, r.isOnline])).toEqual([[expect.any(String), true], ['a-spare', false]]);
    expect(byService[1].supportedProtocols).toEqual({});
    const mine = (await n.c.call('GET', `${CLIENT}/current-identity/edge-routers`, { token: client.token })).body.data as { id: string }[];
    expect(mine.map((r) => r.id)).not.toContain(spare);
    expect(mine.map((r) => r.id)).toContain(n.routerId);
  });
});
