// What every channel listener of the data plane shares (the SDKs' edge port, the routers' control port):
// TLS asking for a client certificate, at most so many connections per address that have not yet been
// accepted (see the 'connection' handler), one deadline for the TCP connection to finish TLS and send
// its hello (a silent socket, a stalled handshake and a trickled hello alike are destroyed), the hello
// as the first frame, and the listener's deadline and budget for frames in progress (guard.ts).
import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import tls from 'node:tls';
import { TLS_CIPHERS } from '../../server/tls-context.js';
import { Channel } from './channel.js';
import { HELLO_LIMITS, type Message } from './codec.js';
import { clientAddresses } from '../../model/events/tls-failures.js';
import { ListenerGuard } from './guard.js';
import { ContentType } from './messages.js';

export interface ChannelListenerOptions {
  host: string;
  port: number;
  certPem: string;
  keyPem: string;
  /** CA bundle to verify client certificates against (socket.authorized); none: only fingerprints count. */
  caPem?: string;
  alpn: string[];
  /** Time to finish TLS and send the hello. */
  helloTimeoutMs: number;
  /** Connections one address may hold before their hello is accepted (0: no cap); accepted ones do not count. */
  maxPerAddress: number;
  /** The listener's limits on frames in progress, and its counts for the metrics. */
  guard: ListenerGuard;
  /** Whether a connection's TLS peer may go on to its hello (its certificate, chiefly); else it is closed at once. */
  admit(socket: tls.TLSSocket): boolean;
}

export interface Hello {
  channel: Channel;
  hello: Message;
  socket: tls.TLSSocket;
  /** Call once the hello is accepted: the deadline no longer applies, nor the per-address cap. */
  accepted(): void;
}

/** Per listener: its open TCP connections, and whether each is past its hello (carries a channel in use). */
const openConnections = new WeakMap<tls.Server, Map<Socket, { accepted: boolean }>>();

/** How long a stop lets the channels it closed finish their goodbyes before their sockets are destroyed. */
export const CLOSE_GRACE_MS = 2000;

/**
 * Stop a channel listener (at shutdown; the owner has already closed the channels in use): no new
 * connections, those not past their hello closed at once (nothing runs on them, and their deadline
 * would otherwise hold the close for up to the hello timeout), and whatever is still open after
 * `graceMs` (a hello accepted while stopping, a peer that does not read its goodbye) destroyed.
 */
export function closeChannelListener(server: tls.Server, graceMs = CLOSE_GRACE_MS): Promise<void> {
  const open = openConnections.get(server) ?? new Map<Socket, { accepted: boolean }>();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const [socket, state] of open) if (!state.accepted) socket.destroy();
  const force = setTimeout(() => {
    for (const socket of open.keys()) socket.destroy();
  }, graceMs);
  return closed.finally(() => clearTimeout(force));
}

/**
 * The secure context of a channel listener: its certificate, the CAs client certificates may chain to,
 * the protocol and cipher policy. Given again to setSecureContext when the certificate is renewed
 * while serving (model/pki/renewal.ts): new handshakes get the new one, open connections carry on.
 */
export function channelContext(o: { certPem: string; keyPem: string; caPem?: string }) {
  return {
    cert: o.certPem,
    key: o.keyPem,
    ...(o.caPem ? { ca: o.caPem } : {}),
    // The C SDK 0.29 speaks TLS 1.2 (mbedTLS) and offers no ALPN; newer clients offer ours.
    minVersion: 'TLSv1.2' as const,
    ciphers: TLS_CIPHERS,
  };
}

/** SHA-1 (lowercase hex) of every certificate the peer sent, leaf first. */
export function peerFingerprints(socket: tls.TLSSocket): string[] {
  const out: string[] = [];
  let cert = socket.getPeerCertificate(true) as tls.DetailedPeerCertificate | undefined;
  const seen = new Set<string>();
  while (cert && cert.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    out.push(createHash('sha1').update(cert.raw).digest('hex'));
    cert = cert.issuerCertificate;
  }
  return out;
}

export function listenForChannels(o: ChannelListenerOptions, onHello: (h: Hello) => void, onError: (e: Error) => void): Promise<tls.Server> {
  // Per address, its connections whose hello is not accepted yet, oldest first.
  const waiting = new Map<string, Set<Socket>>();
  const deadlines = new WeakMap<Socket, NodeJS.Timeout>();
  const admitted = new WeakMap<Socket, () => void>();
  const { guard } = o;
  const open = new Map<Socket, { accepted: boolean }>();
  const server = tls.createServer({
    ...channelContext(o),
    requestCert: true,
    rejectUnauthorized: false,
    ALPNProtocols: o.alpn,
    handshakeTimeout: o.helloTimeoutMs,
  });
  server.on('connection', (socket: Socket) => {
    // The cap counts only connections not yet accepted (no hello with a live API session, or no known
    // router's certificate): an address's established clients (a NAT's SDKs, a router's host) are never
    // refused because of sockets that stay silent there. At the cap the oldest such connection is
    // closed, not the newcomer: silent sockets age out as new ones come, and a client that is going to
    // authenticate (in milliseconds) gets its turn; refusing the newcomer locked the address out for
    // the whole handshake deadline.
    const address = socket.remoteAddress ?? '';
    let mine = waiting.get(address);
    if (!mine) waiting.set(address, (mine = new Set()));
    const peers = mine;
    if (o.maxPerAddress && peers.size >= o.maxPerAddress) {
      const oldest = peers.values().next().value as Socket;
      peers.delete(oldest);
      oldest.destroy();
      guard.counts.refusedAddressCap++;
    }
    peers.add(socket);
    const settled = () => {
      peers.delete(socket);
      if (!peers.size && waiting.get(address) === peers) waiting.delete(address);
    };
    admitted.set(socket, settled);
    // Frames are written whole: Nagle's algorithm would hold a small reply (a Route, a StateConnected)
    // behind an unacknowledged one for a delayed ACK, 40 ms here. Upstream's Go sockets disable it too.
    socket.setNoDelay(true);
    const deadline = setTimeout(() => socket.destroy(), o.helloTimeoutMs);
    deadline.unref();
    deadlines.set(socket, deadline);
    open.set(socket, { accepted: false });
    socket.once('close', () => {
      clearTimeout(deadline);
      open.delete(socket);
      settled();
    });
  });
  const addressOf = clientAddresses(server);
  server.on('tlsClientError', (err, socket) => {
    ListenerGuard.tlsFailed?.(guard.name, addressOf(socket), err);
    socket.destroy();
  });
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    socket.on('error', () => socket.destroy());
    if (!o.admit(socket)) {
      // TLS completed, but with no certificate this port takes (none, or one no CA of ours issued).
      ListenerGuard.tlsFailed?.(guard.name, addressOf(socket), 'refused-certificate');
      return void socket.destroy();
    }
    const raw = (socket as unknown as { _parent?: Socket })._parent;
    const deadline = raw ? deadlines.get(raw) : undefined;
    const settled = raw ? admitted.get(raw) : undefined;
    const channel = new Channel(socket, HELLO_LIMITS, guard);
    let seen = false;
    channel.attach({
      message: (m) => {
        if (seen) return;
        seen = true;
        if (m.type !== ContentType.Hello) return channel.close(new Error('the first message was not a hello'));
        onHello({
          channel,
          hello: m,
          socket,
          accepted: () => {
            if (deadline) clearTimeout(deadline);
            settled?.();
            const state = raw && open.get(raw);
            if (state) state.accepted = true;
          },
        });
      },
      closed: () => {},
    });
  });
  openConnections.set(server, open);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      guard.start();
      server.once('close', () => guard.stop());
      server.on('error', onError);
      resolve(server);
    });
  });
}
