// One router, one connection (issue 41): a second control-channel connection with a router's certificate
// while its first is up is refused (a failed Result saying why), the first carries on undisturbed, and
// the refusals are logged once with both addresses. Two routers started with one certificate used to
// replace each other many times a second, each connect re-sending every API session. A router that
// restarted while its old connection is half-dead still gets in: the old one is sent a heartbeat, and
// replaced when nothing comes back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { startNetwork, type TestNetwork } from '../helpers/network.js';
import { connectRouter, enrollRouter, T, type EnrolledRouter } from '../peers/ctrl-router.js';
import type { EdgePeer, Frame } from '../peers/edge-sdk.js';

let n: TestNetwork;
let ctrlPort: number;
const logged: string[] = [];
beforeAll(async () => {
  n = await startNetwork({}, { logger: { level: 'info', stream: { write: (line: string) => void logged.push(line) } } });
  ctrlPort = n.c.running.fabric!.ctrlPort!;
}, 60_000);
afterAll(() => n.close());

/** As an upstream router does: every heartbeat the controller sends is echoed (header 6). */
function echoHeartbeats(p: EdgePeer) {
  p.onFrame = (f) => {
    const beat = f.headers.get(5);
    if (f.type !== T.Heartbeat || !beat) return false;
    p.send(T.Heartbeat, [[6, beat]]);
    return true;
  };
}

const lines = (msg: string) => logged.map((l) => JSON.parse(l) as { msg: string; [k: string]: unknown }).filter((l) => l.msg.includes(msg));
const fullStates = (p: EdgePeer) => p.inbox.filter((f) => f.type === T.ApiSessionAdded && decode(Schemas.ApiSessionAdded, f.body).isFullState);
const refusedWith = (f: Frame | undefined) => (f && f.headers.get(2)?.[0] === 0 ? f.body.toString('utf8') : undefined);

describe('a second connection of a router that is connected', () => {
  let r: EnrolledRouter;
  let first: EdgePeer;

  it('is refused with the reason; the first stays, keeps hearing of logins, and is sent no full API session state again', async () => {
    r = await enrollRouter(n, 'dup-1');
    const c = await connectRouter(ctrlPort, r);
    expect(c.result?.headers.get(2)).toEqual(Buffer.from([1]));
    first = c.p;
    echoHeartbeats(first);
    await first.next((f) => f.type === T.ApiSessionAdded && decode(Schemas.ApiSessionAdded, f.body).isFullState);
    const firstAddress = `127.0.0.1:${first.socket.localPort}`;

    const second = await connectRouter(ctrlPort, r);
    const secondAddress = `127.0.0.1:${second.p.socket.localPort}`;
    const why = refusedWith(second.result);
    expect(why, 'a failed Result').toBeDefined();
    expect(why).toContain('already connected');
    expect(why).toContain(firstAddress);
    await second.p.whenClosed(3000);

    // Retries, as a second router with the same certificate makes them: each refused, the first untouched.
    // Some come after the first has been silent for a while: it is asked (a heartbeat), answers, and stays.
    for (let i = 0; i < 8; i++) {
      const again = await connectRouter(ctrlPort, r);
      expect(refusedWith(again.result), `retry ${i}`).toContain('already connected');
      await again.p.whenClosed(3000);
    }
    await new Promise((resolve) => setTimeout(resolve, 6000));
    for (let i = 0; i < 4; i++) {
      const again = await connectRouter(ctrlPort, r);
      expect(refusedWith(again.result), `late retry ${i}`).toContain('already connected');
      await again.p.whenClosed(3000);
    }
    expect(first.closed).toBe(false);
    const late = await n.identity('dup-late', []);
    await first.next((f) => f.type === T.ApiSessionAdded && decode(Schemas.ApiSessionAdded, f.body).apiSessions.some((s: { token: string }) => s.token === late.token), 4000);
    expect(fullStates(first)).toEqual([]);
    expect((await n.api('GET', `/edge-routers/${r.id}`)).body.data.isOnline).toBe(true);

    // One connect logged, one refusal line naming both addresses.
    await expect.poll(() => lines('refused a second connection').length).toBe(1);
    const [line] = lines('refused a second connection');
    expect(line).toMatchObject({ router: 'dup-1', routerId: r.id, connected: firstAddress, refused: secondAddress });
    expect(lines('ctrl: router connected').filter((l) => l.router === 'dup-1')).toHaveLength(1);
    expect(lines('ctrl: router disconnected').filter((l) => l.router === 'dup-1')).toHaveLength(0);
  }, 40_000);

  it('is let in at once when the first has closed (the refusals are no ban)', async () => {
    first.close();
    await expect.poll(async () => (await n.api('GET', `/edge-routers/${r.id}`)).body.data.isOnline, { timeout: 3000 }).toBe(false);
    const back = await connectRouter(ctrlPort, r);
    expect(back.result?.headers.get(2)).toEqual(Buffer.from([1]));
    await back.p.next((f) => f.type === T.ApiSessionAdded && decode(Schemas.ApiSessionAdded, f.body).isFullState);
    back.p.close();
  });

  it('replaces a first connection that is half-dead (silent, no answer to a heartbeat): a restarted router gets in', async () => {
    const restarted = await enrollRouter(n, 'dup-restart');
    const old = await connectRouter(ctrlPort, restarted);
    expect(old.result?.headers.get(2)).toEqual(Buffer.from([1]));
    // The old connection says nothing more (the router behind it is gone; its socket's end not seen).
    await new Promise((resolve) => setTimeout(resolve, 5500));
    const fresh = await connectRouter(ctrlPort, restarted, { resultMs: 8000 });
    expect(fresh.result?.headers.get(2)).toEqual(Buffer.from([1]));
    await old.p.whenClosed(3000);
    // It was asked first: a heartbeat (header 5) it did not answer.
    expect(old.p.inbox.some((f) => f.type === T.Heartbeat && f.headers.has(5))).toBe(true);
    await fresh.p.next((f) => f.type === T.ApiSessionAdded && decode(Schemas.ApiSessionAdded, f.body).isFullState);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(fresh.p.closed).toBe(false);
    expect((await n.api('GET', `/edge-routers/${restarted.id}`)).body.data.isOnline).toBe(true);
    expect(lines('its connection was silent').filter((l) => l.router === 'dup-restart')).toHaveLength(1);
    expect(lines('refused a second connection').filter((l) => l.router === 'dup-restart')).toHaveLength(0);
    fresh.p.close();
  }, 30_000);
});
