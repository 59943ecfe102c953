// Failed TLS handshakes on the controller's ports (ziti#1834): the API port, the embedded edge router's
// port (SDKs) and the control port (routers). Each failure is counted (ztc_tls_handshakes_failed_total,
// from these events) and told as a `tls` event naming the port, the client's address and why, never
// anything the client sent. A scanner or a flood fails thousands of handshakes a second from one address:
// the first failure of a (port, address, reason) is told at once, the next ones of the following
// WINDOW_MS folded into one event with their count, so the events file and the stream stay readable and
// the counts stay exact. These events are not kept in the audit table (a flood would fill it).
import type { Socket } from 'node:net';
import type { Server } from 'node:tls';
import type { Events } from './hub.js';
import type { TlsEvent } from './types.js';

export type TlsListener = TlsEvent['listener'];

/** How long further failures of one (port, address, reason) are folded into one event. */
export const WINDOW_MS = 10_000;
/** At most this many (port, address, reason) windows open at once; beyond, failures are told one by one. */
const MAX_OPEN = 10_000;

/** Why a handshake failed, in a few words that make a small set (the metric's label), from Node's error. */
export function tlsFailureReason(err: unknown): { reason: string; error: string } {
  if (typeof err === 'string') return { reason: err, error: '' };
  const e = err as { code?: string; message?: string } | undefined;
  const code = String(e?.code ?? '').slice(0, 64);
  const message = String(e?.message ?? '');
  const reason =
    code === 'ERR_TLS_HANDSHAKE_TIMEOUT' ? 'timeout'
    : code === 'ECONNRESET' || code === 'EPIPE' || /disconnected before secure TLS/i.test(message) ? 'disconnected'
    : /WRONG_VERSION_NUMBER|HTTP_REQUEST|HTTPS_PROXY_REQUEST|PACKET_LENGTH_TOO_LONG|UNKNOWN_PROTOCOL|RECORD_LAYER_FAILURE|BAD_PACKET|NOT_TLS/i.test(code) ? 'not-tls'
    : /UNSUPPORTED_PROTOCOL|NO_SHARED_CIPHER|NO_PROTOCOLS_AVAILABLE|VERSION_TOO_LOW|NO_CIPHERS|NO_SUITABLE|INAPPROPRIATE_FALLBACK/i.test(code) ? 'no-common-protocol'
    : /NO_APPLICATION_PROTOCOL/i.test(code) ? 'no-common-alpn'
    : /_ALERT_/i.test(code) ? 'client-alert'
    : 'other';
  return { reason, error: code };
}

/**
 * The client address of a TLS server's connections, kept from when each connected: a handshake that
 * failed because the client reset the connection has no peer to ask any more.
 */
export function clientAddresses(server: Server): (socket: Socket) => string {
  const seen = new WeakMap<Socket, string>();
  server.on('connection', (s: Socket) => seen.set(s, s.remoteAddress ?? ''));
  return (s) => seen.get((s as Socket & { _parent?: Socket })._parent ?? s) ?? seen.get(s) ?? s.remoteAddress ?? '';
}

interface Window {
  listener: TlsListener;
  address: string;
  reason: string;
  error: string;
  count: number;
  timer: NodeJS.Timeout;
}

export class TlsFailures {
  private readonly open = new Map<string, Window>();

  constructor(private readonly events: Events, private readonly windowMs = WINDOW_MS) {}

  /** One failed handshake (`why`: Node's error, or a reason of our own such as refused-certificate). */
  failed(listener: TlsListener, address: string, why: unknown) {
    const { reason, error } = tlsFailureReason(why);
    const key = `${listener}\n${address}\n${reason}`;
    const w = this.open.get(key);
    if (w) {
      w.count++;
      if (error) w.error = error;
      return;
    }
    this.tell(listener, address, reason, error, 1);
    if (this.open.size >= MAX_OPEN) return;
    const timer = setTimeout(() => this.flush(key), this.windowMs);
    timer.unref();
    this.open.set(key, { listener, address, reason, error, count: 0, timer });
  }

  /** A window ends: its folded failures told as one event, and a new window opened while they come. */
  private flush(key: string) {
    const w = this.open.get(key);
    if (!w) return;
    if (!w.count) return void this.open.delete(key);
    this.tell(w.listener, w.address, w.reason, w.error, w.count);
    w.count = 0;
    w.timer = setTimeout(() => this.flush(key), this.windowMs);
    w.timer.unref();
  }

  private tell(listener: TlsListener, address: string, reason: string, error: string, count: number) {
    this.events.emit(this.events.stamp<TlsEvent>({ namespace: 'tls', event_type: 'handshake-failed', listener, remote_address: address, reason, ...(error ? { error } : {}), count }));
  }

  /** Tell what is folded now and stop (at shutdown, and in tests). */
  close() {
    for (const [key, w] of this.open) {
      clearTimeout(w.timer);
      if (w.count) this.tell(w.listener, w.address, w.reason, w.error, w.count);
      this.open.delete(key);
    }
  }
}
