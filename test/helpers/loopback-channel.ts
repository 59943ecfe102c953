// A channel over loopback TCP and what its peer receives, for tests of channel.ts's writing (pacing,
// large frames): each read's frames as one group, in order. Sockets are closed by closeLoopbacks.
import net from 'node:net';
import { Channel } from '../../src/fabric/channel/channel.js';
import { FRAME_LIMITS, FrameDecoder, type Message } from '../../src/fabric/channel/codec.js';

const open: net.Socket[] = [];

/** For each such file's afterEach. */
export function closeLoopbacks() {
  for (const s of open.splice(0)) s.destroy();
}

export async function loopbackChannel(): Promise<{ channel: Channel; reads: Message[][]; all: () => Message[]; peer: net.Socket; ended: Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  const peer = await accepted;
  server.close();
  open.push(client, peer);
  const decoder = new FrameDecoder(FRAME_LIMITS);
  const reads: Message[][] = [];
  peer.on('data', (d) => reads.push(decoder.push(d)));
  const ended = new Promise<void>((r) => peer.on('end', () => r()));
  return { channel: new Channel(client), reads, all: () => reads.flat(), peer, ended };
}
