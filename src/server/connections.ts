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
 * At most `maxConnectionsPerAddress` open connections from one client address (0: no cap). One address
 * holding thousands of idle connections would otherwise exhaust file descriptors and memory for
 * everyone. At the cap, the oldest of the address's connections that has not sent a request yet (a
 * silent socket, a handshake in progress) is closed to make room, before any TLS work for the new one;
 * only when every connection of the address has sent a request is the newcomer refused. So sockets left
 * silent by one program cannot lock out the other clients behind the same address (a NAT) until their
 * handshake deadline. `refused` counts each close (the metrics).
 */
export function capConnectionsPerAddress(server: Server, max: number, refused?: () => void) {
  if (!max) return;
  // Per address: every open connection, and those that have not sent a request, oldest first.
  const open = new Map<string, { all: Set<Socket>; silent: Set<Socket> }>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    let mine = open.get(address);
    if (!mine) open.set(address, (mine = { all: new Set(), silent: new Set() }));
    const held = mine;
    if (held.all.size >= max) {
      const oldest = held.silent.values().next().value as Socket | undefined;
      refused?.();
      if (!oldest) return void socket.destroy();
      held.silent.delete(oldest);
      held.all.delete(oldest);
      oldest.destroy();
    }
    held.all.add(socket);
    held.silent.add(socket);
    socket.once('close', () => {
      held.all.delete(socket);
      held.silent.delete(socket);
      if (!held.all.size && open.get(address) === held) open.delete(address);
    });
  });
  // A request arrived: the connection is in use (and no longer the first to go).
  server.on('request', (req: { socket: Socket & { _parent?: Socket } }) => {
    const raw = req.socket._parent ?? req.socket;
    open.get(raw.remoteAddress ?? '')?.silent.delete(raw);
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

/** A server's open connections, and those of them still in their TLS handshake (none on plain HTTP). */
export interface OpenSockets {
  all: Set<Socket>;
  handshaking: Set<Socket>;
}

/**
 * Every connection a server holds, TLS handshake done or not: a stop destroys those still open after
 * its grace (closeWithGrace). Node's own close ends only idle kept-alive connections, and stops checking
 * the headers timeout: a connection that finished TLS and never sent a request would hold it for ever.
 */
export function openSockets(server: Server, o: { tls: boolean }): OpenSockets {
  const open: OpenSockets = { all: new Set(), handshaking: new Set() };
  server.on('connection', (socket: Socket) => {
    open.all.add(socket);
    if (o.tls) open.handshaking.add(socket);
    socket.once('close', () => {
      open.all.delete(socket);
      open.handshaking.delete(socket);
    });
  });
  if (o.tls) server.on('secureConnection', (tlsSocket: Socket & { _parent?: Socket }) => tlsSocket._parent && open.handshaking.delete(tlsSocket._parent));
  return open;
}

/**
 * Wait for a server's close (`closing`, already asked for): requests in flight finish and are answered,
 * idle connections are closed at once by Node, and so are those still in their TLS handshake (no request
 * is in flight on them, and any they sent now would be refused); whatever is still open after `graceMs`
 * (a slow request, a silent connection, a reader that stopped reading) is destroyed, so the close ends.
 */
export async function closeWithGrace(closing: Promise<unknown>, sockets: OpenSockets, graceMs: number): Promise<void> {
  for (const socket of sockets.handshaking) socket.destroy();
  const force = setTimeout(() => {
    for (const socket of sockets.all) socket.destroy();
  }, graceMs);
  try {
    await closing;
  } finally {
    clearTimeout(force);
  }
}
