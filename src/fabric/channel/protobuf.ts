// The protocol-buffers wire format for the control channel's message bodies, from the format's own rules
// (varints, length-delimited fields, maps as repeated key/value entries): a few dozen messages need no
// generated code. A schema is data: field number -> name and type; unknown fields are skipped on decode.

export type FieldType = 'string' | 'bytes' | 'bool' | 'uint32' | 'uint64' | 'int32' | 'enum' | 'double' | { message: Schema } | { map: [key: 'string' | 'uint32', value: 'string' | 'bytes' | 'uint32' | 'enum' | { message: Schema }] };

export interface Field {
  n: number;
  type: FieldType;
  repeated?: boolean;
}

export type Schema = Record<string, Field>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Value = any;

export class ProtobufError extends Error {}

/**
 * A message encoded already, given where its schema's message goes: written as it is (the router data
 * model keeps each entity's event encoded, and a full state is those bytes one after the other).
 */
export class Encoded {
  constructor(readonly bytes: Buffer) {}
}

/** Bytes of an encoding: varints gathered as numbers, longer values appended as they are (no per-byte copy). */
class Out {
  private parts: Buffer[] = [];
  private bytes: number[] = [];
  push(x: number) {
    this.bytes.push(x);
  }
  append(b: Buffer) {
    if (this.bytes.length) {
      this.parts.push(Buffer.from(this.bytes));
      this.bytes = [];
    }
    this.parts.push(b);
  }
  done(): Buffer {
    if (this.bytes.length) this.parts.push(Buffer.from(this.bytes));
    return this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts);
  }
}

function varint(n: bigint | number, out: Out) {
  if (typeof n === 'number' && n >= 0 && n <= 0x7fffffff) {
    // Tags, lengths and most values: plain numbers, no BigInt.
    while (n >= 0x80) {
      out.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    out.push(n);
    return;
  }
  let v = BigInt(n);
  if (v < 0n) v = BigInt.asUintN(64, v);
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
}

function tag(n: number, wire: number, out: Out) {
  varint((n << 3) | wire, out);
}

function lengthDelimited(n: number, b: Buffer, out: Out) {
  tag(n, 2, out);
  varint(b.length, out);
  out.append(b);
}

function scalarIsVarint(t: FieldType): boolean {
  return t === 'bool' || t === 'uint32' || t === 'uint64' || t === 'int32' || t === 'enum';
}

function encodeValue(f: Field, v: Value, out: Out) {
  const t = f.type;
  if (typeof t === 'object' && 'map' in t) {
    for (const [k, val] of v instanceof Map ? v : Object.entries(v ?? {})) {
      const entry = new Out();
      if (t.map[0] === 'string') lengthDelimited(1, Buffer.from(String(k)), entry);
      else {
        tag(1, 0, entry);
        varint(Number(k), entry);
      }
      const vt = t.map[1];
      if (vt === 'string' || vt === 'bytes') lengthDelimited(2, vt === 'string' ? Buffer.from(String(val)) : Buffer.from(val as Buffer), entry);
      else encodeValue({ n: 2, type: vt }, val, entry);
      lengthDelimited(f.n, entry.done(), out);
    }
    return;
  }
  if (typeof t === 'object') return lengthDelimited(f.n, v instanceof Encoded ? v.bytes : encode(t.message, v), out);
  if (t === 'string') return lengthDelimited(f.n, Buffer.from(String(v)), out);
  if (t === 'bytes') return lengthDelimited(f.n, Buffer.from(v as Buffer), out);
  if (t === 'double') {
    tag(f.n, 1, out);
    const b = Buffer.alloc(8);
    b.writeDoubleLE(Number(v));
    out.append(b);
    return;
  }
  if (scalarIsVarint(t)) {
    tag(f.n, 0, out);
    varint(t === 'bool' ? (v ? 1 : 0) : typeof v === 'bigint' ? v : Number(v), out);
  }
}

/** Encode an object by its schema; absent and default values are left out, as proto3 does. */
export function encode(schema: Schema, obj: Record<string, Value>): Buffer {
  const out = new Out();
  for (const [name, f] of Object.entries(schema)) {
    const v = obj[name];
    if (v === undefined || v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && !v.length)) continue;
    if (f.repeated) for (const item of v as Value[]) encodeValue(f, item, out);
    else encodeValue(f, v, out);
  }
  return out.done();
}

class Reader {
  at = 0;
  constructor(readonly b: Buffer) {}
  /** A varint known to fit 28 bits in 4 bytes or fewer (tags, lengths): numbers only; otherwise the BigInt path. */
  small(): number {
    const b = this.b;
    let v = 0;
    for (let i = 0, shift = 0; i < 4; i++, shift += 7) {
      if (this.at + i >= b.length) break;
      const x = b[this.at + i];
      v |= (x & 0x7f) << shift;
      if (!(x & 0x80)) {
        this.at += i + 1;
        return v;
      }
    }
    return Number(this.varint());
  }
  varint(): bigint {
    let shift = 0n;
    let v = 0n;
    for (;;) {
      if (this.at >= this.b.length) throw new ProtobufError('truncated varint');
      const x = this.b[this.at++];
      v |= BigInt(x & 0x7f) << shift;
      if (!(x & 0x80)) return v;
      shift += 7n;
      if (shift > 63n) throw new ProtobufError('varint too long');
    }
  }
  bytes(): Buffer {
    const len = this.small();
    if (len < 0 || this.at + len > this.b.length) throw new ProtobufError('field runs past the message');
    const v = this.b.subarray(this.at, this.at + len);
    this.at += len;
    return v;
  }
  skip(wire: number) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.at += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.at += 4;
    else throw new ProtobufError(`unsupported wire type ${wire}`);
    if (this.at > this.b.length) throw new ProtobufError('field runs past the message');
  }
}

/** Decode by schema; repeated fields are arrays, maps are plain objects (keys as strings). */
export function decode(schema: Schema, b: Buffer): Record<string, Value> {
  const byNumber = new Map(Object.entries(schema).map(([name, f]) => [f.n, { name, f }]));
  const out: Record<string, Value> = {};
  for (const [name, f] of Object.entries(schema)) if (f.repeated) out[name] = [];
  const r = new Reader(b);
  while (r.at < b.length) {
    const key = r.small();
    const n = key >>> 3;
    const wire = key & 7;
    const known = byNumber.get(n);
    if (!known) {
      r.skip(wire);
      continue;
    }
    const { name, f } = known;
    const t = f.type;
    let v: Value;
    if (typeof t === 'object' && 'map' in t) {
      const entry = decode({ key: { n: 1, type: t.map[0] }, value: { n: 2, type: t.map[1] } }, r.bytes());
      out[name] ??= {};
      const vt = t.map[1];
      out[name][String(entry.key ?? (t.map[0] === 'string' ? '' : 0))] = entry.value ?? (vt === 'string' ? '' : vt === 'bytes' ? Buffer.alloc(0) : typeof vt === 'object' ? {} : 0);
      continue;
    } else if (typeof t === 'object') v = decode(t.message, r.bytes());
    else if (t === 'string') v = r.bytes().toString('utf8');
    else if (t === 'bytes') v = Buffer.from(r.bytes());
    else if (f.repeated && wire === 2 && scalarIsVarint(t)) {
      // Packed (proto3's default for repeated numbers and enums): one length-delimited run of varints.
      const run = new Reader(r.bytes());
      while (run.at < run.b.length) {
        const x = run.varint();
        out[name].push(t === 'bool' ? x !== 0n : t === 'uint64' ? x : t === 'int32' ? Number(BigInt.asIntN(32, x)) : Number(x));
      }
      continue;
    } else if (t === 'double' && wire === 1) {
      if (r.at + 8 > b.length) throw new ProtobufError('field runs past the message');
      v = b.readDoubleLE(r.at);
      r.at += 8;
    } else if (wire === 0) {
      const x = r.varint();
      v = t === 'bool' ? x !== 0n : t === 'uint64' ? x : t === 'int32' ? Number(BigInt.asIntN(32, x)) : Number(x);
    } else {
      r.skip(wire);
      continue;
    }
    if (f.repeated) out[name].push(v);
    else out[name] = v;
  }
  return out;
}
