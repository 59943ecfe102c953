// RouterLinks: the links a router dialed.
import type { Message } from '../../channel/codec.js';
import { decode } from '../../channel/protobuf.js';
import { Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';

/** RouterLinks: the links this router dialed (sent, possibly empty, on every connect, then per new link). */
export async function linksReported(r: CtrlRouter, m: Message) {
  const { links } = decode(Schemas.RouterLinks, m.body);
  for (const l of links as Record<string, unknown>[]) {
    if (!l.id || !l.destRouterId) continue;
    await r.network.linkReported({
      id: String(l.id),
      src: r.routerId,
      dst: String(l.destRouterId),
      protocol: String(l.linkProtocol ?? ''),
      dialAddress: String(l.dialAddress ?? ''),
      iteration: Number(l.iteration ?? 0),
      staticCost: 1,
      srcLatencyNs: 0,
      dstLatencyNs: 0,
      cost: 1,
    });
  }
}
