// One link between ztc's router and another router (ctrl-channel-1.1.md 2.7): upstream's routers open it
// as two channels by default ("split": payloads on one, acknowledgements on the other, so acks never
// wait behind bulk data), or as one. Either channel echoes heartbeats (the far router closes a link whose
// heartbeats go unanswered) and answers latency probes; payloads and acks go to the forwarder.
import type { Channel } from '../channel/channel.js';
import { bool, message, type Message } from '../channel/codec.js';
import { ContentType, Header } from '../channel/messages.js';
import { XgressType } from './xgress.js';

export interface LinkHandler {
  payload(link: Link, m: Message): void;
  ack(link: Link, m: Message): void;
  closed(link: Link): void;
}

export class Link {
  closed = false;
  /** Sides of circuits whose sends wait for the payload channel to drain. */
  private drainWaiters = new Set<() => void>();

  constructor(
    readonly id: string,
    /** The router at the other end. */
    readonly peerId: string,
    readonly payloadCh: Channel,
    readonly ackCh: Channel | undefined,
    /** Whether ztc's router dialed it (else the peer did). */
    readonly dialed: boolean,
    readonly iteration: number,
    private readonly handler: LinkHandler,
  ) {
    for (const ch of ackCh ? [payloadCh, ackCh] : [payloadCh]) {
      ch.attach({ message: (m) => this.deliver(ch, m), closed: () => this.close() });
    }
    payloadCh.socket.on('drain', () => {
      const waiting = [...this.drainWaiters];
      this.drainWaiters.clear();
      for (const w of waiting) w();
    });
  }

  /** A message from one of the link's channels (also those that came before the link was whole). */
  deliver(ch: Channel, m: Message) {
    if (this.closed) return;
    // Heartbeats ride on any message (header 5): answered at once, or the far router closes the link.
    const beat = m.headers.get(Header.Heartbeat);
    if (beat) ch.send(message(ContentType.Heartbeat, [[Header.HeartbeatResponse, beat]]));
    switch (m.type) {
      case XgressType.Payload:
        return this.handler.payload(this, m);
      case XgressType.Ack:
        return this.handler.ack(this, m);
      case ContentType.Latency:
      case ContentType.Ping:
        ch.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
        return;
      default:
        // Heartbeats alone, traceroute controls, newer types: nothing to do (upstream drops unknown types too).
        return;
    }
  }

  /** A payload (ours, or one in transit) on its way to the peer. Headers of the previous hop's channel go. */
  sendPayload(m: Message) {
    this.forward(this.payloadCh, m);
  }

  sendAck(m: Message) {
    this.forward(this.ackCh ?? this.payloadCh, m);
  }

  private forward(ch: Channel, m: Message) {
    m.seq = 0;
    m.headers.delete(Header.Heartbeat);
    m.headers.delete(Header.HeartbeatResponse);
    m.headers.delete(Header.ReplyFor);
    ch.send(m);
  }

  get full() {
    return this.payloadCh.full;
  }

  /** Call `f` once the payload channel drained (or the link closed). */
  onDrain(f: () => void) {
    if (this.closed) return f();
    this.drainWaiters.add(f);
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    this.payloadCh.close();
    this.ackCh?.close();
    const waiting = [...this.drainWaiters];
    this.drainWaiters.clear();
    for (const w of waiting) w();
    this.handler.closed(this);
  }
}
