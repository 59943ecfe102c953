// Several controllers on one PostgreSQL database: each runs its own edge router with its own record; a dial
// reaches the terminators its controller routes to, not those of another controller's own router (it says
// so; upstream routers listing every controller are shared: shared-routers.test.ts); an API
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

    // On the other controller's router: nobody hosts it there, and B does not route to A's router: it says so.
    const onB = await EdgePeer.connect(b.routerPort, { cert: client.cert, key: client.key });
    expect((await onB.hello(client.token)).type).toBe(CT.Result);
    const dialToken = await a.session(client, service, 'Dial');
    const seq = onB.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(dialToken));
    const refused = await onB.replyTo(seq);
    expect(refused.type).toBe(CT.StateClosed);
    const aRouter = (await a.api('GET', `/edge-routers/${a.routerId}`)).body.data.name as string;
    expect(refused.body.toString()).toMatch(new RegExp(`only on the embedded router of another controller \\('${aRouter}'\\)`));

    // The API session ends through controller B: A's router closes the host's channel.
    expect((await b.c.call('DELETE', `${CLIENT}/current-api-session`, { token: host.token })).status).toBe(200);
    await hp.whenClosed(2500);
    onB.close();
  });

  it('a Dial policy deleted through one controller ends a live circuit on the other\'s router within 2 s', async () => {
    const service = await b.service('mc-revoke');
    const host: Member = await b.identity('mc-rev-host', ['mc-revoke-hosts']);
    const client: Member = await b.identity('mc-rev-client', ['mc-revoke-clients']);
    const hp = await b.peer(host);
    const bound = await hp.replyTo(hp.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.RouterProvidedConnId, Buffer.from([1])]], Buffer.from(await b.session(host, service, 'Bind'))));
    expect(bound.type).toBe(CT.StateConnected);
    const dp = await b.peer(client);
    const connect = dp.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(await b.session(client, service, 'Dial')));
    const dial = await hp.next((f) => f.type === CT.Dial);
    hp.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dial.seq]).buffer)]], dial.headers.get(H.RouterProvidedConnId)!);
    expect((await dp.replyTo(connect)).type).toBe(CT.StateConnected);
    // The policy goes through controller A; B's router carries the circuit.
    const policy = ((await a.api('GET', `/service-policies?filter=${encodeURIComponent('name = "mc-revoke-dial"')}`)).body.data as { id: string }[])[0];
    const started = Date.now();
    expect((await a.api('DELETE', `/service-policies/${policy.id}`)).status).toBe(200);
    const closed = await dp.next((f) => f.type === CT.StateClosed, 2500);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(closed.body.toString()).toMatch(/access-lost|session closed/);
    hp.close();
    dp.close();
  });
});
