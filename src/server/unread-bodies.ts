// A request answered before its body arrived (refused by authorization on its headers, or declared
// larger than the route takes): after the answer Node reads and discards the rest so the connection
// can carry the next request. Unbounded, that lets an unauthenticated client stream for as long as it
// likes; closed at once, a client still sending never reads the answer (its write fails first). So
// the rest is read and dropped for at most LINGER_MS and LINGER_BYTES, then the socket is destroyed.
import type { FastifyInstance } from 'fastify';

const LINGER_MS = 2000;
const LINGER_BYTES = 1024 * 1024;

export function boundUnreadBodies(app: FastifyInstance) {
  // onResponse runs once the answer is sent, after Node started discarding the body (which drops
  // earlier 'data' listeners, not this one).
  app.addHook('onResponse', async (request) => {
    const req = request.raw;
    if (req.complete !== false) return;
    const socket = req.socket;
    let dropped = 0;
    req.on('data', (d: Buffer) => {
      dropped += d.length;
      if (dropped > LINGER_BYTES) socket.destroy();
    });
    const timer = setTimeout(() => req.complete || socket.destroy(), LINGER_MS);
    timer.unref();
    const closed = () => clearTimeout(timer);
    socket.once('close', closed);
    // A keep-alive socket carries many requests: each one's listener goes when its body has been read.
    req.once('end', () => {
      clearTimeout(timer);
      socket.off('close', closed);
    });
  });
}
