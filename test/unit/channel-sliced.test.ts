// Large frames on a channel (channel.ts: bodies over 1 MB, such as a Large model's router data model, are
// written 64 KB at a time while the socket holds little): the frame arrives whole, frames sent meanwhile
// follow it in order, drained() waits for all of it to leave, and a clean close still sends the rest.
import { afterEach, describe, expect, it } from 'vitest';
import { message, u32, type Message } from '../../src/fabric/channel/codec.js';
import { ContentType, Header } from '../../src/fabric/channel/messages.js';
import { closeLoopbacks, loopbackChannel } from '../helpers/loopback-channel.js';

afterEach(closeLoopbacks);
const pair = loopbackChannel;

const big = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => i % 251));
const frame = (i: number, body = Buffer.from(`frame ${i}`)) => message(ContentType.StateClosed, [[Header.ConnId, u32(i)]], body);
const ids = (ms: Message[]) => ms.map((m) => m.headers.get(Header.ConnId)!.readUInt32LE(0));

describe('a channel writing a large frame', () => {
  it('sends it whole, the frames sent meanwhile after it in order (a second large one too), and drained() waits for all', async () => {
    const { channel, all, peer } = await pair();
    peer.pause();
    const body = big(3 * 1024 * 1024 + 17);
    channel.send(frame(0, body));
    channel.send(frame(1));
    channel.send(frame(2, big(1500 * 1024)));
    channel.send(frame(3));
    // Little is handed to the socket while its peer reads nothing.
    expect(channel.socket.writableLength).toBeLessThan(1024 * 1024);
    expect(channel.full).toBe(true);
    let drained = false;
    const done = channel.drained().then(() => (drained = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(drained).toBe(false);
    peer.resume();
    await done;
    await expect.poll(() => all().length, { timeout: 5000 }).toBe(4);
    expect(ids(all())).toEqual([0, 1, 2, 3]);
    expect(all()[0].body.equals(body)).toBe(true);
    expect(all()[2].body.length).toBe(1500 * 1024);
    expect(channel.full).toBe(false);
  });

  it('a clean close during a large frame still sends the rest of it, and what followed, before the end', async () => {
    const { channel, all, peer, ended } = await pair();
    peer.pause();
    const body = big(2 * 1024 * 1024);
    channel.send(frame(0, body));
    channel.send(frame(1));
    channel.close();
    peer.resume();
    await ended;
    expect(ids(all())).toEqual([0, 1]);
    expect(all()[0].body.equals(body)).toBe(true);
  });
});
