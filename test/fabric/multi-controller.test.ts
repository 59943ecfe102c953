// Several controllers on one PostgreSQL database: each runs its own edge router with its own record; a dial
// reaches the terminators of the router it arrives at (no links between routers yet, README); an API
// session ended through one controller ends its connections on the other's router within a second.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, testDatabase } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { CT, EdgePeer, H, le32 } from '../peers/edge-sdk.js';

const postgres = !!process.env.ZTC_TEST_DB;
let a: TestNetwork;
let b: TestNetwork;
beforeAll(async () => {
  if (!postgres) return;
  const db = await testDatabase();
  a = await startNetwork({ db });
  b = await startNetwork({ db });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
});

describe.skipIf(!postgres)('two controllers, one database', () => {
  it('each has its own online router; dials reach the terminators of their router; a logout elsewhere ends the channel', async () => {
    expect(a.routerId).not.toBe(b.routerId);
    const routers = (await a.api('GET', '/edge-routers?limit=100')).body.data as { id: string; isOnline: boolean }[];
    expect(routers.filter((r) => [a.routerId, b.routerId].includes(r.id)).map((r) => r.isOnline)).toEqual([true, true]);

    const service = await a.service('shared-echo');
    const host: Member = await a.identity('mc-host', ['shared-echo-hosts']);
    const client: Member = await a.identity('mc-client', ['shared-echo-clients']);
    const hp = await a.peer(host);
    const bindToken = await a.session(host, service, 'Bind');
    const bseq = hp.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(bindToken));
    expect((await hp.replyTo(bseq)).type).toBe(CT.StateConnected);

    // On the other controller's router: nobody hosts it there.
    const onB = await EdgePeer.connect(b.routerPort, { cert: client.cert, key: client.key });
    expect((await onB.hello(client.token)).type).toBe(CT.Result);
    const dialToken = await a.session(client, service, 'Dial');
    const seq = onB.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(dialToken));
    const refused = await onB.replyTo(seq);
    expect(refused.type).toBe(CT.StateClosed);
    expect(refused.body.toString()).toMatch(/no terminator/);

    // The API session ends through controller B: A's router closes the host's channel.
    expect((await b.c.call('DELETE', `${CLIENT}/current-api-session`, { token: host.token })).status).toBe(200);
    await hp.whenClosed(2500);
    onB.close();
  });
});
