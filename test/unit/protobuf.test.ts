// The protobuf wire codec against bytes worked out by hand from the format's rules (tag = field << 3 |
// wire type; varints; length-delimited strings, messages and map entries), both ways.
import { describe, expect, it } from 'vitest';
import { decode, encode, ProtobufError } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';

describe('protobuf wire format', () => {
  it('encodes and decodes a string and a bool', () => {
    const bytes = encode(Schemas.Unroute, { circuitId: 'ab', now: true });
    expect(bytes.toString('hex')).toBe('0a0261621001');
    expect(decode(Schemas.Unroute, bytes)).toEqual({ circuitId: 'ab', now: true });
  });

  it('encodes a uint32 -> bytes map entry and a multi-byte varint', () => {
    const bytes = encode(Schemas.CreateTerminatorV2Request, { address: 'x', peerData: { 1003: Buffer.from([1]) }, cost: 300 });
    // 0a 01 78 | 22 06 (08 eb 07 | 12 01 01) | 28 ac 02
    expect(bytes.toString('hex')).toBe('0a0178' + '2206' + '08eb07120101' + '28ac02');
    const back = decode(Schemas.CreateTerminatorV2Request, bytes);
    expect(back.peerData['1003']).toEqual(Buffer.from([1]));
    expect(back.cost).toBe(300);
  });

  it('decodes repeated messages and skips fields it does not know', () => {
    const session = Buffer.from('0a01741201661a0169', 'hex'); // token "t", fingerprint "f", id "i"
    const body = Buffer.concat([Buffer.from('0801', 'hex'), Buffer.from([0x12, session.length]), session, Buffer.from('f8060a', 'hex')]); // + field 111 varint 10
    expect(decode(Schemas.ApiSessionAdded, body)).toEqual({ isFullState: true, apiSessions: [{ token: 't', certFingerprints: ['f'], id: 'i' }] });
  });

  it('encodes and decodes a double (wire type 1, little-endian IEEE 754) and packed repeated enums', () => {
    const bytes = encode(Schemas.Histogram, { count: 2n, mean: 1.5 });
    expect(bytes.toString('hex')).toBe('0802' + '19' + '000000000000f83f');
    expect(decode(Schemas.Histogram, bytes)).toEqual({ count: 2n, mean: 1.5 });
    // RouterMetadata{capabilities:[1, 2]} as proto3 writes it: one length-delimited run.
    expect(decode(Schemas.RouterMetadata, Buffer.from('0a020102', 'hex'))).toEqual({ capabilities: [1, 2] });
  });

  it('refuses a field that runs past the message', () => {
    expect(() => decode(Schemas.Unroute, Buffer.from('0a0561', 'hex'))).toThrow(ProtobufError);
  });
});
