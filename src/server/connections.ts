// What one client can hold of the server, below HTTP routing: how many connections one address may keep
// open, how long a client may take to send its headers or stay idle, and the answer when a request
// cannot even be parsed (a URL or headers over the size limit), which still carries the error envelope.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config.js';
import { meta } from './envelope.js';

type Limits = Pick<Config, 'maxConnectionsPerAddress' | 'headersTimeoutSeconds' | 'idleTimeoutSeconds'>;

/** The longest a whole request may take once its headers arrived (bodies are at most 1 MiB). */
export const REQUEST_TIMEOUT_MS = 60_000;

/** Options for the fastify instance and its server (https.createServer takes the http.Server ones too). */
export function serverTimeouts(c: Limits) {
  const headers = c.headersTimeoutSeconds * 1000;
  return {
    fastify: {
      // How long a kept-alive connection may wait for its next request. A silent new connection is
      // closed by the headers timeout; no socket inactivity timeout, which would also cut a long
      // answer in preparation (a snapshot of a large database).
      connectionTimeout: 0,
      keepAliveTimeout: c.idleTimeoutSeconds * 1000,
      requestTimeout: Math.max(REQUEST_TIMEOUT_MS, headers),
      clientErrorHandler: answerUnparsable,
    },
    server: {
      headersTimeout: headers,
      // Node checks the header and request timeouts this often (30 s by default).
      connectionsCheckingInterval: Math.min(1000, headers),
      // TLS handshakes are bounded by the same time as headers.
      handshakeTimeout: headers,
    },
  };
}

const CODES: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'REQUEST_HEADERS_TOO_LARGE', 'The URL or the headers are longer than the server accepts (16 KiB in all)'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'REQUEST_TIMEOUT', 'The request took too long to arrive'],
};

const LINGER_MS = 2000;
const LINGER_BYTES = 1024 * 1024;

/** A request the HTTP parser refused, answered with the error envelope (fastify's default has its own shape). */
function answerUnparsable(err: NodeJS.ErrnoException, socket: Socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] = CODES[err.code ?? ''] ?? [400, 'COULD_NOT_PARSE_REQUEST', 'The request is not valid HTTP'];
  const body = JSON.stringify({ error: { code, message, requestId: randomUUID() }, meta: meta() });
  if (socket.writable) {
    socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    // A client still sending (the rest of an over-long URL) would have its write fail, and never read
    // the answer, if the socket closed at once: read and drop what it sends for a moment (lingering
    // close), but no longer than LINGER_MS nor beyond LINGER_BYTES, so a trickling client cannot keep
    // the socket (and its slot).
    let dropped = 0;
    socket.on('data', (d: Buffer) => {
      dropped += d.length;
      if (dropped > LINGER_BYTES) socket.destroy();
    });
    socket.on('end', () => socket.destroy());
    socket.resume();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  } else socket.destroy();
}

/**
 * At most `maxConnectionsPerAddress` open connections from one client address (0: no cap); the next
 * is closed at once, before any TLS work. One address holding thousands of idle connections would
 * otherwise exhaust file descriptors and memory for everyone.
 */
export function capConnectionsPerAddress(server: Server, max: number) {
  if (!max) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const n = open.get(address) ?? 0;
    if (n >= max) {
      socket.destroy();
      return;
    }
    open.set(address, n + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left) open.set(address, left);
      else open.delete(address);
    });
  });
}

/**
 * A connection must finish its TLS handshake within `ms`, whatever it sends or does not: one that never
 * sends a ClientHello (which Node's handshake timeout does not cover) or stalls in the middle is destroyed
 * (not ended: a peer that does not read must not keep the socket), so its descriptor and its address's
 * slot are released. A client that closes first is destroyed at once.
 */
export function closeUnfinishedHandshakes(server: Server, ms: number) {
  const pending = new WeakMap<Socket, NodeJS.Timeout>();
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => socket.destroy(), ms);
    timer.unref();
    pending.set(socket, timer);
    const done = () => clearTimeout(timer);
    socket.once('close', done);
    // Half-closed before TLS: nothing more can come; without this the socket would wait in CLOSE-WAIT.
    socket.once('end', () => {
      if (pending.has(socket)) socket.destroy();
    });
  });
  server.on('secureConnection', (tlsSocket: Socket & { _parent?: Socket }) => {
    const raw = tlsSocket._parent;
    if (!raw) return;
    const timer = pending.get(raw);
    if (timer) clearTimeout(timer);
    pending.delete(raw);
  });
}
