// A test peer for an upstream OpenZiti 1.1 router's side of the control channel, written from
// ../shared/reference/ctrl-channel-1.1.md: enrollment (erott, two CSRs), the hello with its version,
// link listeners and metadata headers, and the typed header values (string slices, uint32->bytes maps).
/* eslint-disable @typescript-eslint/no-explicit-any */
// Bodies use the protobuf codec of src/fabric (its own tests check it against hand-made bytes).
import { createHash, X509Certificate } from 'node:crypto';
import { encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import { newKeyAndCsr } from '../../src/model/pki/csr.js';
import { EdgePeer, le32, type Frame } from './edge-sdk.js';

export const T = {
  Hello: 0, Result: 2, Heartbeat: 5, Fault: 1004, Route: 1005, Unroute: 1006, RouteResult: 1022, CircuitConfirmation: 1034, RouterLinks: 1035, VerifyRouter: 1036,
  RemoveTerminators: 1038, PeerStateChanges: 1050, ServerHello: 20000, ClientHello: 20001, Error: 20002, SessionRemoved: 20102, ApiSessionAdded: 20200,
  ApiSessionRemoved: 20202, CreateTerminatorV2: 20216, CreateTerminatorV2Response: 20217, CreateCircuitV2: 20218, CreateCircuitV2Response: 20219,
  EnrollmentCertsResponse: 20301, EnrollmentExtendRouterRequest: 20302, EnrollmentExtendRouterVerifyRequest: 20303,
};
export const UPSTREAM_VERSION = 'v1.1.10|a11e8b4b|2024-09-04|linux|amd64';

export const i32 = (n: number) => Buffer.from(new Int32Array([n]).buffer);
export const strings = (list: string[]) => Buffer.concat([le32(list.length), ...list.flatMap((s) => [le32(Buffer.byteLength(s)), Buffer.from(s)])]);
export const bytesMap = (m: [number, Buffer][]) => Buffer.concat([le32(m.length), ...m.flatMap(([k, v]) => [le32(k), le32(v.length), v])]);
export function readBytesMap(b: Buffer): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  let at = 4;
  for (let i = 0; i < b.readUInt32LE(0); i++) {
    const k = b.readUInt32LE(at);
    const n = b.readUInt32LE(at + 4);
    out.set(k, b.subarray(at + 8, at + 8 + n));
    at += 8 + n;
  }
  return out;
}
export const fp = (pem: string) => createHash('sha1').update(new X509Certificate(pem).raw).digest('hex');

export interface EnrolledRouter {
  id: string;
  name: string;
  cert: string;
  key: string;
}

/** What enrolling needs of the test network (test/helpers/network.ts): its management calls and raw calls. */
interface Api {
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  c: { call(method: string, path: string, o: { body: unknown }): Promise<{ status: number; text: string; body: any }> };
}

/** An edge router created through the API and enrolled as `ziti router enroll` does it. */
export async function enrollRouter(n: Api, name: string, roleAttributes = ['public']): Promise<EnrolledRouter> {
  const made = await n.api('POST', '/edge-routers', { name, roleAttributes });
  const id = made.body.data.id;
  const token = (await n.api('GET', `/edge-routers/${id}`)).body.data.enrollmentToken;
  const clientCsr = newKeyAndCsr(id);
  const serverCsr = newKeyAndCsr(id, ['localhost', '127.0.0.1']);
  const enrolled = await n.c.call('POST', `/edge/client/v1/enroll/erott?token=${token}`, { body: { certCsr: clientCsr.csrPem, serverCertCsr: serverCsr.csrPem } });
  if (enrolled.status !== 200) throw new Error(`enrolling router ${name}: ${enrolled.status} ${enrolled.text}`);
  return { id, name, cert: enrolled.body.data.cert, key: clientCsr.keyPem };
}

export interface HelloOptions {
  cert?: string;
  key?: string;
  id?: string;
  /** Link listeners (hello header 10) and whether to announce link management (header 11). */
  listeners?: { address: string; protocol: string; groups?: string[] }[];
  managesLinks?: boolean;
  /** How long to wait for the hello's Result (3 s by default). */
  resultMs?: number;
}

/** A router's side: TLS with its enrolled certificate and ALPN ziti-ctrl, then its hello (sequence -1). */
export async function connectRouter(port: number, r: EnrolledRouter, o: HelloOptions = {}): Promise<{ p: EdgePeer; result?: Frame }> {
  const p = await EdgePeer.connect(port, { cert: o.cert ?? r.cert, key: o.key ?? r.key, alpn: ['ziti-ctrl'] });
  const headers: [number, Buffer][] = [[4, Buffer.from(UPSTREAM_VERSION)]];
  if (o.listeners) headers.push([10, encode(Schemas.Listeners, { listeners: o.listeners })]);
  // RouterMetadata{capabilities:[LinkManagement]}, packed as proto3 writes repeated enums.
  if (o.managesLinks) headers.push([11, Buffer.from([0x0a, 0x01, 0x01])]);
  p.send(T.Hello, headers, Buffer.from(o.id ?? r.id), -1);
  const result = await p.next((f) => f.type === T.Result, o.resultMs ?? 3000).catch(() => undefined);
  return { p, result };
}
