// The edge listener: TLS on the router port (3022 by default) where SDKs connect (deadlines and caps in
// channel/listener.ts), and where other routers dial their links (ALPN ziti-link: link/accept.ts). An
// accepted SDK hello makes an EdgeConn. A client certificate is required, but checked by fingerprint
// against the API session or the enrolled router (as upstream), not by chain at the TLS layer.
import type tls from 'node:tls';
import type { Channel } from '../channel/channel.js';
import { bool, FRAME_LIMITS, i32, message, str, type Message } from '../channel/codec.js';
import type { ListenerGuard } from '../channel/guard.js';
import { listenForChannels, peerFingerprints } from '../channel/listener.js';
import { ContentType, Header } from '../channel/messages.js';
import type { Fabric } from '../fabric.js';
import { paceForLegacySdk, stallsOnBursts } from './legacy-c-sdk.js';
import { EdgeConn } from './sdk-connection.js';

import type { LinkAcceptor } from '../link/accept.js';

export interface EdgeListenerOptions {
  host: string;
  port: number;
  certPem: string;
  keyPem: string;
  /** Time to finish TLS and send a hello. */
  helloTimeoutMs: number;
  /** Connections one address may hold before their hello is accepted (0: no cap). */
  maxPerAddress: number;
  /** Deadline and budget for frames in progress; counts for the metrics. */
  guard: ListenerGuard;
  /** Sent in the hello reply's version header: Version|Revision|BuildDate|OS|Arch. */
  version: string;
  /** Links other routers dial here (ALPN ziti-link), when this router links (link/accept.ts). */
  links?: LinkAcceptor;
}

export function startEdgeListener(fabric: Fabric, o: EdgeListenerOptions): Promise<tls.Server> {
  return listenForChannels(
    // Every SDK presents its identity certificate: without one there is nobody to authenticate.
    { ...o, alpn: o.links ? ['ziti-edge', 'ziti-link'] : ['ziti-edge'], admit: (socket) => peerFingerprints(socket).length > 0 },
    (h) => {
      // Routers' link dialers ask for ziti-link; SDKs for ziti-edge, or for nothing (the C SDK 0.29).
      if (h.socket.alpnProtocol === 'ziti-link' && o.links) return void o.links.accept(h).catch((e) => fabric.log.warn({ err: String(e) }, 'link: accepting failed'));
      void accept(fabric, h.channel, h.hello, peerFingerprints(h.socket), o, h.accepted);
    },
    (e) => fabric.log.warn({ err: String(e) }, 'edge: listener error'),
  );
}

async function accept(fabric: Fabric, channel: Channel, hello: Message, fingerprints: string[], o: EdgeListenerOptions, accepted: () => void) {
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
  accepted();
  channel.setLimits(FRAME_LIMITS);
  const conn = new EdgeConn(fabric, channel, who, fingerprints);
  // A C SDK before 0.36 is handed bursts a few frames at a time (legacy-c-sdk.ts).
  if (stallsOnBursts(hello)) paceForLegacySdk(channel, () => conn.nudgeFrame());
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
