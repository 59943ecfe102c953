// The xgress messages routers exchange over links (ctrl-channel-1.1.md 2.6/2.7; upstream's
// router/xgress messages): a circuit's bytes as Payloads, each acknowledged by the end that receives it.
// Headers 2000-2255 carry the payload's own small headers (0: the edge message's UUID, 0x10: its edge
// flags); 2256 and up the circuit, sequence, flags, receive buffer and the sender's clock for RTT.
import { EMPTY, message, u32, type Message } from '../channel/codec.js';

export const XgressType = { Payload: 1100, Ack: 1101, Control: 1102 } as const;

export const XgressHeader = {
  /** First of the payload's own headers (2000 + key). */
  PayloadFirst: 2000,
  PayloadLast: 2255,
  CircuitId: 2256,
  Sequence: 2257,
  Flags: 2258,
  RecvBufferSize: 2259,
  RTT: 2260,
} as const;

/** The payload headers edge routers carry across: the edge message's UUID (128) and its Flags (1010). */
export const PayloadKey = { Uuid: 0, EdgeFlags: 0x10 } as const;

/** Payload flags; Retransmit (2.x) marks a resend, which 1.x routers ignore. */
export const XgressFlag = { CircuitEnd: 1, Originator: 2, CircuitStart: 4, Chunk: 8, Retransmit: 16 } as const;

/** Which end of the circuit sent it: the one that dialed (initiator) or the terminator's. */
export type Originator = 'initiator' | 'terminator';

export interface Payload {
  circuitId: string;
  flags: number;
  sequence: number;
  /** The payload's own headers by key (0..255). */
  headers: Map<number, Buffer>;
  data: Buffer;
  /** The sender's clock (ms, 16 bits), echoed in the ack. */
  rtt?: Buffer;
}

export interface Ack {
  circuitId: string;
  flags: number;
  sequences: number[];
  recvBufferSize?: number;
  rtt?: Buffer;
}

export class XgressError extends Error {}

export const originatorOf = (flags: number): Originator => (flags & XgressFlag.Originator ? 'terminator' : 'initiator');
export const originatorFlag = (o: Originator) => (o === 'terminator' ? XgressFlag.Originator : 0);

function u64(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32LE(n >>> 0, 0);
  return b;
}

function u16(n: number): Buffer {
  const b = Buffer.allocUnsafe(2);
  b.writeUInt16LE(n & 0xffff);
  return b;
}

function readU32(b: Buffer | undefined): number | undefined {
  return b && b.length >= 4 ? b.readUInt32LE(0) : undefined;
}

export function encodePayload(p: Payload): Message {
  const m = message(XgressType.Payload, [], p.data);
  for (const [k, v] of p.headers) m.headers.set(XgressHeader.PayloadFirst + k, v);
  m.headers.set(XgressHeader.CircuitId, Buffer.from(p.circuitId, 'utf8'));
  if (p.flags) m.headers.set(XgressHeader.Flags, u32(p.flags));
  // Nothing waits in our receive buffer: we pass each payload on as it comes (backpressure is TCP's).
  m.headers.set(XgressHeader.RecvBufferSize, u32(0));
  m.headers.set(XgressHeader.Sequence, u64(p.sequence));
  m.headers.set(XgressHeader.RTT, u16(Date.now()));
  return m;
}

export function decodePayload(m: Message): Payload {
  const circuit = m.headers.get(XgressHeader.CircuitId);
  if (!circuit?.length) throw new XgressError('a payload without a circuit id');
  const seq = m.headers.get(XgressHeader.Sequence);
  // Written as a uint64, read back as the int32 it was (upstream does the same).
  if (!seq || seq.length < 4) throw new XgressError('a payload without a sequence number');
  const headers = new Map<number, Buffer>();
  for (const [k, v] of m.headers) if (k >= XgressHeader.PayloadFirst && k <= XgressHeader.PayloadLast) headers.set(k - XgressHeader.PayloadFirst, v);
  return { circuitId: circuit.toString('utf8'), flags: readU32(m.headers.get(XgressHeader.Flags)) ?? 0, sequence: seq.readInt32LE(0), headers, data: m.body, rtt: m.headers.get(XgressHeader.RTT) };
}

export function encodeAck(a: Ack): Message {
  const body = a.sequences.length ? Buffer.allocUnsafe(a.sequences.length * 4) : EMPTY;
  a.sequences.forEach((s, i) => body.writeInt32BE(s, i * 4));
  const m = message(XgressType.Ack, [], body);
  m.headers.set(XgressHeader.CircuitId, Buffer.from(a.circuitId, 'utf8'));
  if (a.flags) m.headers.set(XgressHeader.Flags, u32(a.flags));
  m.headers.set(XgressHeader.RecvBufferSize, u32(a.recvBufferSize ?? 0));
  m.headers.set(XgressHeader.RTT, a.rtt ?? u16(0));
  return m;
}

export function decodeAck(m: Message): Ack {
  const circuit = m.headers.get(XgressHeader.CircuitId);
  if (!circuit?.length) throw new XgressError('an acknowledgement without a circuit id');
  if (m.body.length % 4) throw new XgressError(`an acknowledgement of ${m.body.length} bytes: not a list of sequence numbers`);
  const sequences: number[] = [];
  for (let i = 0; i < m.body.length; i += 4) sequences.push(m.body.readInt32BE(i));
  return { circuitId: circuit.toString('utf8'), flags: readU32(m.headers.get(XgressHeader.Flags)) ?? 0, sequences, recvBufferSize: readU32(m.headers.get(XgressHeader.RecvBufferSize)), rtt: m.headers.get(XgressHeader.RTT) };
}

/** The circuit a Payload or Ack belongs to, without decoding the rest (transit forwarding). */
export function circuitOf(m: Message): string | undefined {
  return m.headers.get(XgressHeader.CircuitId)?.toString('utf8');
}
