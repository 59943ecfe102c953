// Channel V2 framing: a 20-byte little-endian prefix (magic 03 06 09 0C, content type, sequence, header
// length, body length), the headers as (id int32, length int32, bytes) triples, then the body. The
// decoder holds at most one frame, refuses frames over its limits before buffering them, and hands out
// header and body views into the frame (no copies).

export const MAGIC = Buffer.from([0x03, 0x06, 0x09, 0x0c]);
export const PREFIX = 20;

export interface Message {
  type: number;
  seq: number;
  headers: Map<number, Buffer>;
  body: Buffer;
}

export interface FrameLimits {
  maxHeaderBytes: number;
  maxBodyBytes: number;
}

/** What a hello may carry (upstream's listener: 4192 bytes of headers and of body). */
export const HELLO_LIMITS: FrameLimits = { maxHeaderBytes: 4192, maxBodyBytes: 4192 };
/** After the hello: data frames are as large as an application's write (the Go SDK sends one frame per write). */
export const FRAME_LIMITS: FrameLimits = { maxHeaderBytes: 64 * 1024, maxBodyBytes: 8 * 1024 * 1024 };

export class FrameError extends Error {}

export function message(type: number, headers: [number, Buffer][] = [], body: Buffer = EMPTY, seq = 0): Message {
  return { type, seq, headers: new Map(headers), body };
}

export const EMPTY = Buffer.alloc(0);

export const u32 = (n: number) => {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};
export const i32 = (n: number) => {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32LE(n | 0);
  return b;
};
export const bool = (v: boolean) => Buffer.from([v ? 1 : 0]);
export const str = (s: string) => Buffer.from(s, 'utf8');

/** A u32 header written by any SDK: 4 bytes from Go, 1 to 4 from the C SDKs (little-endian). */
export function readUint(b: Buffer | undefined): number | undefined {
  if (!b || b.length === 0 || b.length > 8) return undefined;
  let n = 0;
  for (let i = Math.min(b.length, 4) - 1; i >= 0; i--) n = n * 256 + b[i];
  return n;
}
export const readBool = (b: Buffer | undefined) => !!b && b.length > 0 && b[0] === 1;
export const readInt32 = (b: Buffer | undefined) => (b && b.length === 4 ? b.readInt32LE(0) : undefined);

/** The prefix and headers of a frame in one buffer; the body is written after it as it is (no copy). */
export function encodeHead(m: Message): Buffer {
  let headerBytes = 0;
  for (const v of m.headers.values()) headerBytes += 8 + v.length;
  const out = Buffer.allocUnsafe(PREFIX + headerBytes);
  MAGIC.copy(out, 0);
  out.writeInt32LE(m.type, 4);
  out.writeInt32LE(m.seq | 0, 8);
  out.writeInt32LE(headerBytes, 12);
  out.writeInt32LE(m.body.length, 16);
  let at = PREFIX;
  for (const [k, v] of m.headers) {
    out.writeInt32LE(k, at);
    out.writeInt32LE(v.length, at + 4);
    v.copy(out, at + 8);
    at += 8 + v.length;
  }
  return out;
}

export const encode = (m: Message): Buffer => Buffer.concat([encodeHead(m), m.body]);

function parseHeaders(b: Buffer): Map<number, Buffer> {
  const headers = new Map<number, Buffer>();
  let at = 0;
  while (at < b.length) {
    if (b.length - at < 8) throw new FrameError('truncated header');
    const key = b.readInt32LE(at);
    const len = b.readInt32LE(at + 4);
    if (len < 0 || at + 8 + len > b.length) throw new FrameError(`header ${key} runs past the header block`);
    headers.set(key, b.subarray(at + 8, at + 8 + len));
    at += 8 + len;
  }
  return headers;
}

/** Incremental decoder: push what the socket gives, take whole messages. */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need = 0;
  constructor(public limits: FrameLimits) {}

  /** Bytes held for a frame not yet complete. */
  get pending() {
    return this.buffered;
  }

  /** The whole size of the frame in progress, once its prefix has arrived (else 0). */
  get expected() {
    return this.need;
  }

  /** Drop whatever is held (the connection closed). */
  clear() {
    this.chunks = [];
    this.buffered = 0;
    this.need = 0;
  }

  push(chunk: Buffer): Message[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: Message[] = [];
    for (;;) {
      if (this.buffered < PREFIX) return out;
      if (!this.need) {
        const head = this.peek(PREFIX);
        if (head.readUInt32BE(0) !== MAGIC.readUInt32BE(0)) throw new FrameError('not a channel V2 frame (bad magic)');
        const headerLen = head.readInt32LE(12);
        const bodyLen = head.readInt32LE(16);
        if (headerLen < 0 || headerLen > this.limits.maxHeaderBytes) throw new FrameError(`headers of ${headerLen} bytes (at most ${this.limits.maxHeaderBytes})`);
        if (bodyLen < 0 || bodyLen > this.limits.maxBodyBytes) throw new FrameError(`a body of ${bodyLen} bytes (at most ${this.limits.maxBodyBytes})`);
        this.need = PREFIX + headerLen + bodyLen;
      }
      if (this.buffered < this.need) return out;
      const frame = this.take(this.need);
      this.need = 0;
      const headerLen = frame.readInt32LE(12);
      out.push({
        type: frame.readInt32LE(4),
        seq: frame.readInt32LE(8),
        headers: parseHeaders(frame.subarray(PREFIX, PREFIX + headerLen)),
        body: frame.subarray(PREFIX + headerLen),
      });
    }
  }

  private peek(n: number): Buffer {
    if (this.chunks[0].length >= n) return this.chunks[0];
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined;
  }

  private take(n: number): Buffer {
    let frame: Buffer;
    if (this.chunks[0].length >= n) {
      frame = this.chunks[0].subarray(0, n);
      const rest = this.chunks[0].subarray(n);
      if (rest.length) this.chunks[0] = rest;
      else this.chunks.shift();
    } else {
      const joined = Buffer.concat(this.chunks);
      frame = joined.subarray(0, n);
      this.chunks = joined.length > n ? [joined.subarray(n)] : [];
    }
    this.buffered -= n;
    return frame;
  }
}
