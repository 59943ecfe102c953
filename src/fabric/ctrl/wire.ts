// Typed header values of the control channel beyond plain integers (ctrl-channel-1.1.md section 1.2):
// string slices, uint32->bytes maps and string->string maps, each prefixed by its entry count (LE u32).

export function encodeStrings(list: string[]): Buffer {
  const parts: Buffer[] = [u32(list.length)];
  for (const s of list) {
    const b = Buffer.from(s, 'utf8');
    parts.push(u32(b.length), b);
  }
  return Buffer.concat(parts);
}

export function decodeStrings(b: Buffer | undefined): string[] {
  if (!b || b.length < 4) return [];
  const n = b.readUInt32LE(0);
  const out: string[] = [];
  let at = 4;
  for (let i = 0; i < n && at + 4 <= b.length; i++) {
    const len = b.readUInt32LE(at);
    if (at + 4 + len > b.length) break;
    out.push(b.subarray(at + 4, at + 4 + len).toString('utf8'));
    at += 4 + len;
  }
  return out;
}

export function encodeBytesMap(m: Map<number, Buffer>): Buffer {
  const parts: Buffer[] = [u32(m.size)];
  for (const [k, v] of m) parts.push(u32(k), u32(v.length), v);
  return Buffer.concat(parts);
}

export function decodeBytesMap(b: Buffer | undefined): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  if (!b || b.length < 4) return out;
  const n = b.readUInt32LE(0);
  let at = 4;
  for (let i = 0; i < n && at + 8 <= b.length; i++) {
    const k = b.readUInt32LE(at);
    const len = b.readUInt32LE(at + 4);
    if (at + 8 + len > b.length) break;
    out.set(k, Buffer.from(b.subarray(at + 8, at + 8 + len)));
    at += 8 + len;
  }
  return out;
}

export function encodeStringMap(m: Record<string, string>): Buffer {
  const entries = Object.entries(m);
  const parts: Buffer[] = [u32(entries.length)];
  for (const [k, v] of entries) {
    const kb = Buffer.from(k);
    const vb = Buffer.from(v);
    parts.push(u32(kb.length), kb, u32(vb.length), vb);
  }
  return Buffer.concat(parts);
}

function u32(n: number) {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}
