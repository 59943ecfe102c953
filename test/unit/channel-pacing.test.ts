// Paced channels (channel.ts setPacing, edge/legacy-c-sdk.ts): a burst goes out a few frames per interval,
// in order, every frame once; a clean close still sends what waited; the nudges after a burst are frames
// the C SDK 0.29 ignores, on a conn it holds in a state that ignores them.
import { afterEach, describe, expect, it } from 'vitest';
import { message, str, u32, type Message } from '../../src/fabric/channel/codec.js';
import { ContentType, Header } from '../../src/fabric/channel/messages.js';
import { closeLoopbacks, loopbackChannel } from '../helpers/loopback-channel.js';
import { FRAMES, paceForLegacySdk, stallsOnBursts } from '../../src/fabric/edge/legacy-c-sdk.js';

afterEach(closeLoopbacks);
const pair = loopbackChannel;

const frame = (i: number) => message(ContentType.StateClosed, [[Header.ConnId, u32(i)]], str(`closed ${i}`));

describe('a paced channel', () => {
  it('sends a burst a few frames per interval, in order, each once', async () => {
    const { channel, all } = await pair();
    // In which turn of the event loop each frame was written (a frame's head starts with the magic; its
    // body is written after it): a counter moved once per turn, so a busy machine's scheduling cannot split
    // or join the channel's turns as timestamps could.
    let tick = 0;
    let ticking = true;
    const bump = () => {
      tick++;
      if (ticking) setImmediate(bump);
    };
    setImmediate(bump);
    const at: number[] = [];
    const write = channel.socket.write.bind(channel.socket);
    channel.socket.write = ((chunk: Buffer, ...rest: never[]) => {
      if (chunk.readUInt32BE(0) === 0x0306090c) at.push(tick);
      return write(chunk, ...rest);
    }) as typeof channel.socket.write;
    const bursts: number[] = [];
    channel.setPacing({ frames: 4, intervalMs: 20, idle: (b) => bursts.push(b) });
    for (let i = 0; i < 18; i++) channel.send(frame(i));
    expect(channel.held).toBe(14);
    await expect.poll(() => all().length, { timeout: 5000, interval: 10 }).toBe(18);
    expect(all().map((m) => m.headers.get(Header.ConnId)!.readUInt32LE(0))).toEqual([...Array(18).keys()]);
    ticking = false;
    // 4 frames a turn at most, each turn in a loop iteration of its own.
    const turns = new Map<number, number>();
    for (const t of at) turns.set(t, (turns.get(t) ?? 0) + 1);
    expect([...turns.values()]).toEqual([4, 4, 4, 4, 2]);
    await expect.poll(() => bursts, { timeout: 2000, interval: 10 }).toEqual([18]);
    channel.close();
  });

  it('sends what waited when it closes cleanly', async () => {
    const { channel, all } = await pair();
    channel.setPacing({ frames: 2, intervalMs: 1000 });
    for (let i = 0; i < 10; i++) channel.send(frame(i));
    channel.close();
    await expect.poll(() => all().length, { timeout: 2000, interval: 10 }).toBe(10);
  });

  it('counts what waits for its turn as unwritten (backpressure)', async () => {
    const { channel } = await pair();
    channel.setPacing({ frames: 1, intervalMs: 1000 });
    const big = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < 6; i++) channel.send(message(ContentType.Data, [[Header.ConnId, u32(1)]], big));
    expect(channel.full).toBe(true);
    channel.close(new Error('done'));
  });
});

describe('the C SDK before 0.36', () => {
  it('is told apart by its hello', () => {
    const hello = (body: string, headers: [number, Buffer][] = []) => message(ContentType.Hello, [[Header.SessionToken, str('t')], ...headers], str(body));
    expect(stallsOnBursts(hello('ziti-sdk-c[0]@host'))).toBe(true);
    expect(stallsOnBursts(hello('ziti-sdk-c[0]@host', [[Header.SupportsInspect, Buffer.from([1])]]))).toBe(false);
    expect(stallsOnBursts(hello(''))).toBe(false);
  });

  it('is nudged after a burst, with the frame the connection gives', async () => {
    const { channel, all } = await pair();
    const nudge = message(ContentType.StateConnected, [[Header.ConnId, u32(7)], [Header.Seq, u32(0)]]);
    paceForLegacySdk(channel, () => nudge);
    for (let i = 0; i < FRAMES * 3; i++) channel.send(frame(i));
    // The burst, then nudges (5 ms, 25 ms, 100 ms... after it).
    await expect.poll(() => all().filter((m) => m.type === ContentType.StateConnected).length, { timeout: 3000, interval: 20 }).toBeGreaterThanOrEqual(3);
    expect(all().slice(0, FRAMES * 3).every((m) => m.type === ContentType.StateClosed)).toBe(true);
    // A few frames alone are not a burst: no nudges after them.
    const { channel: quiet, all: quietAll } = await pair();
    paceForLegacySdk(quiet, () => nudge);
    for (let i = 0; i < 3; i++) quiet.send(frame(i));
    await new Promise((r) => setTimeout(r, 150));
    expect(quietAll().map((m) => m.type)).toEqual([ContentType.StateClosed, ContentType.StateClosed, ContentType.StateClosed]);
    channel.close();
    quiet.close();
  });
});
