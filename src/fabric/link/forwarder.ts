// Where ztc's router sends what arrives for a circuit that crosses links: per circuit, the table its Route
// gave (source address -> destination address, ctrl-channel-1.1.md 2.6), addresses being link ids or the
// circuit's ends on this router (ingress and egress ids). A payload or ack in transit is passed on as it
// came; one for an end here is handed to that end (xgress-side.ts).
import type { Message } from '../channel/codec.js';
import type { FabricLog } from '../log.js';
import type { RouteForward } from '../ctrl/paths.js';
import type { Link, LinkHandler } from './link.js';
import { circuitOf, decodeAck, decodePayload, XgressError } from './xgress.js';
import type { XgressSide } from './xgress-side.js';

export class Forwarder implements LinkHandler {
  readonly links = new Map<string, Link>();
  private tables = new Map<string, Map<string, string>>();
  private sides = new Map<string, XgressSide>();
  /** Payloads dropped for a circuit with no forwarding here (ended, or never routed), for the log's rate. */
  dropped = 0;

  constructor(
    private readonly log: FabricLog,
    private readonly linkClosed: (l: Link) => void,
  ) {}

  addLink(l: Link) {
    const old = this.links.get(l.id);
    this.links.set(l.id, l);
    if (old && old !== l) old.close();
  }

  /** A Route: the circuit's forwarding here (a reroute replaces it). */
  route(circuitId: string, forwards: RouteForward[]) {
    this.tables.set(circuitId, new Map(forwards.map((f) => [f.srcAddress, f.dstAddress])));
  }

  /** An Unroute: the forwarding goes, and the ends here (returned, for the caller to close). */
  unroute(circuitId: string): XgressSide[] {
    const table = this.tables.get(circuitId);
    this.tables.delete(circuitId);
    const ends: XgressSide[] = [];
    for (const address of table?.keys() ?? []) {
      const s = this.sides.get(address);
      if (s && s.circuitId === circuitId) ends.push(s);
    }
    return ends;
  }

  attach(side: XgressSide) {
    this.sides.set(side.address, side);
  }

  detach(side: XgressSide) {
    if (this.sides.get(side.address) === side) this.sides.delete(side.address);
  }

  circuitsOver(linkId: string): string[] {
    return [...this.tables].filter(([, t]) => [...t.values()].includes(linkId) || t.has(linkId)).map(([id]) => id);
  }

  // ---- from links

  payload(link: Link, m: Message) {
    this.pass(link.id, m, false);
  }

  ack(link: Link, m: Message) {
    this.pass(link.id, m, true);
  }

  closed(link: Link) {
    if (this.links.get(link.id) === link) this.links.delete(link.id);
    this.linkClosed(link);
  }

  // ---- from the ends here

  fromSide(side: XgressSide, m: Message, ack: boolean) {
    this.deliver(this.tables.get(side.circuitId)?.get(side.address), m, ack);
  }

  linkOf(side: XgressSide): Link | undefined {
    const dst = this.tables.get(side.circuitId)?.get(side.address);
    return dst === undefined ? undefined : this.links.get(dst);
  }

  private pass(from: string, m: Message, ack: boolean) {
    const circuitId = circuitOf(m);
    const dst = circuitId === undefined ? undefined : this.tables.get(circuitId)?.get(from);
    // Nothing routed (an ack or end-of-circuit that crossed the Unroute, a late resend): dropped, as upstream does.
    if (dst === undefined) {
      if (this.dropped++ % 1000 === 0) this.log.debug({ circuit: circuitId, link: from, dropped: this.dropped }, 'link: dropped what arrived for a circuit not routed here');
      return;
    }
    const out = this.deliver(dst, m, ack);
    // In transit: a next link that cannot keep up holds the one feeding it (TCP slows the sender).
    const source = this.links.get(from);
    if (out?.full && source && !ack) source.payloadCh.pauseFor(out.payloadCh);
  }

  /** Hand `m` on to `dst`; returns the link it left on, if it did. */
  private deliver(dst: string | undefined, m: Message, ack: boolean): Link | undefined {
    if (dst === undefined) return;
    const link = this.links.get(dst);
    if (link) {
      if (ack) link.sendAck(m);
      else link.sendPayload(m);
      return link;
    }
    const side = this.sides.get(dst);
    if (!side) return;
    try {
      if (ack) side.acked(decodeAck(m));
      else side.received(decodePayload(m));
    } catch (e) {
      if (!(e instanceof XgressError)) throw e;
      this.log.info({ circuit: side.circuitId, err: e.message }, 'link: dropped a malformed message');
    }
  }
}
