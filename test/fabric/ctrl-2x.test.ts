// The control channel against a test router of the 2.x kind, written from
// ../shared/reference/ctrl-channel-2.x.md (test/peers/ctrl-router.ts, 2.x mode): the grouped hello and
// its Result, the router data model with the keys a 2.x router checks SDK certificates and service
// session JWTs with, the service session as a JWT it verifies on its own, terminators and circuits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { startNetwork, type TestNetwork } from '../helpers/network.js';
import { capable, connectRouter2x, enrollRouter, i32, T, type EnrolledRouter } from '../peers/ctrl-router.js';
import type { EdgePeer } from '../peers/edge-sdk.js';

let n: TestNetwork;
let ctrlPort: number;
let router: EnrolledRouter;
let other: EnrolledRouter;
beforeAll(async () => {
  n = await startNetwork({ headersTimeoutSeconds: 2 });
  ctrlPort = n.c.running.fabric!.ctrlPort!;
  router = await enrollRouter(n, 'upstream-2x');
  other = await enrollRouter(n, 'upstream-2x-b');
}, 60_000);
afterAll(() => n.close());

describe('a 2.x router on the control channel: the grouped hello', () => {
  let p: EdgePeer;
  let connectionId: string;
  let secret: Buffer;

  it('is accepted: Result with version, connection id, id, capabilities (bit 6, not bit 5) in 1002 and 12, the group headers echoed with a new secret', async () => {
    const c = await connectRouter2x(ctrlPort, router, { listeners: [{ address: 'tls:127.0.0.1:10080', protocol: 'tls', groups: ['default'] }] });
    p = c.p;
    const r = c.result!;
    expect(r.headers.get(1)!.readInt32LE(0)).toBe(-1);
    expect(r.headers.get(2)).toEqual(Buffer.from([1]));
    expect(r.headers.get(4)!.toString().split('|')).toHaveLength(5);
    expect(r.headers.get(8)!.toString()).toBeTruthy();
    connectionId = r.headers.get(0)!.toString();
    expect(connectionId).toBeTruthy();
    const mask = r.headers.get(1002)!;
    expect(mask).toEqual(Buffer.from([0x5e]));
    expect(r.headers.get(12)).toEqual(mask);
    // SupportsJWTLegacySessions (6): without it a 2.x router refuses the controller.
    expect(capable(mask, 6)).toBe(true);
    for (const bit of [1, 2, 3, 4]) expect(capable(mask, bit)).toBe(true);
    // GroupedCtrlChan (5) clear: the router opens no second underlay.
    expect(capable(mask, 5)).toBe(false);
    expect(r.headers.get(9)).toEqual(Buffer.from([1]));
    expect(r.headers.get(7)!.toString()).toBe('ctrl.default');
    secret = r.headers.get(10)!;
    expect(secret.length).toBeGreaterThan(0);
  });

  it('stays connected past the hello deadline, its heartbeats echoed; online with its version', async () => {
    p.send(T.Heartbeat, [[5, Buffer.from('0807060504030201', 'hex')]]);
    expect((await p.next((f) => f.headers.has(6))).headers.get(6)).toEqual(Buffer.from('0807060504030201', 'hex'));
    await new Promise((r) => setTimeout(r, 2500));
    expect(p.closed).toBe(false);
    await expect.poll(async () => (await n.api('GET', `/edge-routers/${router.id}`)).body.data, { timeout: 3000 }).toMatchObject({ isOnline: true, version: 'v2.0.3', versionInfo: { version: 'v2.0.3', revision: 'e86e337a', os: 'linux', arch: 'amd64' } });
  });

  it('its link listeners (header 1000) are what its peers are told', async () => {
    const b = await connectRouter2x(ctrlPort, other);
    expect(b.result!.headers.get(2)).toEqual(Buffer.from([1]));
    // Answer the ServerHello so it counts as up at once.
    const hello = await b.p.next((f) => f.type === T.ServerHello);
    b.p.send(T.ClientHello, [[1, i32(hello.seq)]], encode(Schemas.ClientHello, { version: 'v2.0.3', hostname: 'localhost', listeners: [] }));
    // Its links, none yet (what a router reports at once on connect).
    b.p.send(T.RouterLinks, [], Buffer.alloc(0));
    const peers = await b.p.next((f) => f.type === T.PeerStateChanges && decode(Schemas.PeerStateChanges, f.body).changes.some((c: { id: string }) => c.id === router.id), 8000);
    const change = decode(Schemas.PeerStateChanges, peers.body).changes.find((c: { id: string }) => c.id === router.id);
    expect(change.listeners[0]).toMatchObject({ address: 'tls:127.0.0.1:10080', protocol: 'tls', groups: ['default'] });
    b.p.close();
    await b.p.whenClosed();
  });

  it('refuses an underlay that is not its group\'s first: an unknown connection id, and a second one of a known group', async () => {
    const unknown = await connectRouter2x(ctrlPort, other, { later: { connectionId: 'no-such-channel' }, secret: Buffer.from('whatever') });
    expect(unknown.result!.headers.get(2)).toEqual(Buffer.from([0]));
    expect(unknown.result!.headers.get(1)!.readInt32LE(0)).toBe(-1);
    expect(unknown.result!.body.toString()).toMatch(/no channel with connection id/);
    await unknown.p.whenClosed();

    const second = await connectRouter2x(ctrlPort, router, { later: { connectionId }, secret });
    expect(second.result!.headers.get(2)).toEqual(Buffer.from([0]));
    expect(second.result!.body.toString()).toMatch(/takes no further underlays/);
    await second.p.whenClosed();
    // The first underlay carries on.
    expect(p.closed).toBe(false);
  });

  it('echoes the group secret a router brings', async () => {
    p.close();
    await p.whenClosed();
    const mine = Buffer.from('0123456789abcdef0123456789abcdef');
    // The controller may not have seen the close yet: it then refuses the new connection as a duplicate (after a probe).
    let c = await connectRouter2x(ctrlPort, router, { secret: mine, resultMs: 6000 });
    for (let i = 0; i < 5 && c.result?.headers.get(2)?.[0] !== 1; i++) {
      await new Promise((r) => setTimeout(r, 300));
      c = await connectRouter2x(ctrlPort, router, { secret: mine, resultMs: 6000 });
    }
    expect(c.result!.headers.get(2)).toEqual(Buffer.from([1]));
    expect(c.result!.headers.get(10)).toEqual(mine);
    p = c.p;
  });
});
