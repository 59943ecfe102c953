// The edge listener: TLS on the router port (3022 by default) where SDKs connect. Every connection must
// finish TLS and send its hello within the hello deadline, from an address under its connection cap;
// then it is an EdgeConn. A client certificate is asked for and required, but checked by fingerprint
// against the API session (as upstream), not by chain at the TLS layer.
import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import tls from 'node:tls';
import { TLS_CIPHERS } from '../../server/tls-context.js';
import { Channel } from '../channel/channel.js';
import { bool, FRAME_LIMITS, HELLO_LIMITS, i32, message, str, type Message } from '../channel/codec.js';
import { ContentType, Header } from '../channel/messages.js';
import type { Fabric } from '../fabric.js';
import { EdgeConn } from './sdk-connection.js';

export interface EdgeListenerOptions {
  host: string;
  port: number;
  certPem: string;
  keyPem: string;
  /** Time to finish TLS and send a hello. */
  helloTimeoutMs: number;
  /** Open connections one address may hold (0: no cap). */
  maxPerAddress: number;
  /** Sent in the hello reply's version header: Version|Revision|BuildDate|OS|Arch. */
  version: string;
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

export function startEdgeListener(fabric: Fabric, o: EdgeListenerOptions): Promise<tls.Server> {
  const perAddress = new Map<string, number>();
  const server = tls.createServer({
    cert: o.certPem,
    key: o.keyPem,
    requestCert: true,
    rejectUnauthorized: false,
    // The C SDK 0.29 speaks TLS 1.2 (mbedTLS) and offers no ALPN; C SDK 1.x offers ziti-edge.
    minVersion: 'TLSv1.2',
    ciphers: TLS_CIPHERS,
    ALPNProtocols: ['ziti-edge'],
    handshakeTimeout: o.helloTimeoutMs,
  });

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const n = perAddress.get(address) ?? 0;
    if (o.maxPerAddress && n >= o.maxPerAddress) {
      socket.destroy();
      return;
    }
    perAddress.set(address, n + 1);
    socket.once('close', () => {
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
    // The deadline covers a silent TCP connection, a slow handshake and a trickled hello alike.
    const deadline = setTimeout(() => socket.destroy(), o.helloTimeoutMs);
    deadline.unref();
    socket.once('close', () => clearTimeout(deadline));
    (socket as Socket & { ztcDeadline?: NodeJS.Timeout }).ztcDeadline = deadline;
  });
  server.on('tlsClientError', (_err, socket) => socket.destroy());

  server.on('secureConnection', (socket: tls.TLSSocket) => {
    const raw = (socket as unknown as { _parent?: Socket })._parent ?? socket;
    const deadline = (raw as Socket & { ztcDeadline?: NodeJS.Timeout }).ztcDeadline;
    socket.on('error', () => socket.destroy());
    const fingerprints = peerFingerprints(socket);
    if (!fingerprints.length) {
      // Every SDK presents its identity certificate: without one there is nobody to authenticate.
      socket.destroy();
      return;
    }
    const channel = new Channel(socket, HELLO_LIMITS);
    let helloSeen = false;
    channel.attach({
      message: (m) => {
        if (helloSeen) return;
        helloSeen = true;
        if (m.type !== ContentType.Hello) return channel.close(new Error('the first message was not a hello'));
        void accept(fabric, channel, m, fingerprints, o, deadline);
      },
      closed: () => {},
    });
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      server.on('error', (e) => fabric.log.warn({ err: String(e) }, 'edge: listener error'));
      resolve(server);
    });
  });
}

async function accept(fabric: Fabric, channel: Channel, hello: Message, fingerprints: string[], o: EdgeListenerOptions, deadline?: NodeJS.Timeout) {
  let who: Awaited<ReturnType<typeof EdgeConn.authenticate>>;
  try {
    who = await EdgeConn.authenticate(fabric, hello, fingerprints);
  } catch (e) {
    who = `could not check the API session: ${(e as Error).message}`;
  }
  if (channel.closed) return;
  if (typeof who === 'string') {
    // Closed without a failure Result (2.3): the C SDK then logs in again, as it does with upstream.
    fabric.log.info({ reason: who }, 'edge: refused a connection');
    channel.close(new Error(who));
    return;
  }
  if (deadline) clearTimeout(deadline);
  channel.setLimits(FRAME_LIMITS);
  const conn = new EdgeConn(fabric, channel, who, fingerprints);
  fabric.conns.add(conn);
  channel.attach({
    message: (m) => conn.handle(m),
    closed: () => {
      fabric.conns.delete(conn);
      conn.closeAll();
    },
  });
  const result = message(
    ContentType.Result,
    [
      [Header.ResultSuccess, bool(true)],
      [Header.HelloVersion, str(o.version)],
      [Header.ConnectionId, str(conn.id)],
      [Header.Id, str(fabric.routerId)],
      // A promise kept: BindSuccess follows a Bind that asks for it.
      [Header.SupportsBindSuccess, bool(true)],
    ],
    undefined,
    -1,
  );
  // ReplyFor = the hello's own sequence (0 from the C SDKs, -1 from Go), which the Go SDK insists on.
  result.headers.set(Header.ReplyFor, i32(hello.seq));
  channel.send(result);
  fabric.log.debug({ identity: who.identityName }, 'edge: SDK connected');
}
