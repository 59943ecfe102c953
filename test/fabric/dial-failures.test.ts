// Failed dials say why (issue 43, item 5), on the embedded router and through upstream routers alike:
// the SDK (or the upstream router, for its SDK) is told the reason with its edge error code; the
// controller logs one line naming the service, the identity and the cause; a fabric.circuits event of
// type failed carries the cause, and ztc_dial_failures_total counts it. A dial that finds the service's
// terminators only on the other kind of router (the embedded router does not link with upstream ones)
// says so, in both directions, instead of "no terminator".
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import type { CircuitEvent, ZtcEvent } from '../../src/model/events/types.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, strings, T } from '../peers/ctrl-router.js';
import { CT, H, le32, type EdgePeer, type Frame } from '../peers/edge-sdk.js';

let n: TestNetwork;
const logged: { msg: string; [k: string]: unknown }[] = [];
const events: CircuitEvent[] = [];
let client: Member;
let host: Member;
beforeAll(async () => {
  n = await startNetwork({}, { logger: { level: 'info', stream: { write: (line: string) => void logged.push(JSON.parse(line)) } } as never });
  n.c.running.ctx.events.subscribe((e: ZtcEvent) => {
    if (e.namespace === 'fabric.circuits' && e.event_type === 'failed') events.push(e);
  });
  client = await n.identity('df-client', ['df-none-clients', 'df-up-clients', 'df-emb-clients']);
  host = await n.identity('df-host', ['df-up-hosts', 'df-emb-hosts']);
}, 60_000);
afterAll(() => n.close());

const text = (f: Frame) => f.body.toString('utf8');
const failed = (service: string) => expect.poll(() => events.find((e) => e.service_id === service), { timeout: 3000 });
const loggedFor = (service: string) => logged.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('dial failed') && l.service === service);
async function dial(p: EdgePeer, token: string, connId: number): Promise<Frame> {
  return p.replyTo(p.send(CT.Connect, [[H.ConnId, le32(connId)], [H.Seq, le32(0)]], Buffer.from(token)));
}

describe('a failed dial on the embedded router', () => {
  it('tells the SDK why with its edge error code, logs one line, emits a failed circuit event and counts it', async () => {
    const service = await n.service('df-none');
    const p = await n.peer(client);
    const r = await dial(p, await n.session(client, service, 'Dial'), 1);
    expect(r.type).toBe(CT.StateClosed);
    expect(text(r)).toMatch(/service 'df-none' has no terminators/);
    expect(r.headers.get(1014)!.readUInt32LE(0)).toBe(8);
    await failed(service).toMatchObject({ failure_cause: 'NO_TERMINATORS', client_id: client.id, path: { nodes: [n.routerId] } });
    await expect.poll(() => loggedFor('df-none'), { timeout: 3000 }).toHaveLength(1);
    expect(loggedFor('df-none')[0]).toMatchObject({ identity: 'df-client', cause: 'NO_TERMINATORS' });
    // An unknown session: refused as upstream refuses it, named by the channel's identity.
    const bad = await dial(p, 'no-such-session', 2);
    expect(text(bad)).toBe('invalid session');
    expect(bad.headers.get(1014)!.readUInt32LE(0)).toBe(3);
    await expect.poll(() => events.find((e) => e.failure_cause === 'INVALID_SESSION'), { timeout: 3000 }).toMatchObject({ client_id: client.id, service_id: '' });
    const metrics = (await n.c.call('GET', '/metrics', { token: n.admin })).text;
    expect(metrics).toMatch(/^ztc_dial_failures_total\{cause="NO_TERMINATORS"\} [1-9]/m);
    expect(metrics).toMatch(/^ztc_dial_failures_total\{cause="INVALID_SESSION"\} [1-9]/m);
    p.close();
  });

  it('says the service is hosted on routers it has no link to, when it is (NO_PATH)', async () => {
    const service = await n.service('df-up');
    const router = await enrollRouter(n, 'df-upstream');
    const { p: r } = await connectRouter(n.c.running.fabric!.ctrlPort!, router);
    const bind = await n.session(host, service, 'Bind');
    const made = await r.replyTo(r.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'df-up-t', sessionToken: bind, fingerprints: [fp(host.cert)] })));
    expect(decode(Schemas.CreateTerminatorV2Response, made.body).result ?? 0).toBe(0);
    const p = await n.peer(client);
    const refused = await dial(p, await n.session(client, service, 'Dial'), 3);
    expect(text(refused)).toMatch(/has 1 terminator\(s\), none on a router reachable from router '.+': no chain of links joins them/);
    await failed(service).toMatchObject({ failure_cause: 'NO_PATH' });
    p.close();
    r.close();
  });
});

describe('a failed dial through an upstream router', () => {
  it('says the service is hosted on the embedded router, which this router has no link to (NO_PATH), and is reported the same', async () => {
    const service = await n.service('df-emb');
    const h = await n.peer(host);
    const bound = await h.replyTo(h.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(await n.session(host, service, 'Bind'))));
    expect(bound.type).toBe(CT.StateConnected);
    const router = await enrollRouter(n, 'df-upstream-2');
    const { p: r } = await connectRouter(n.c.running.fabric!.ctrlPort!, router);
    const dialToken = await n.session(client, service, 'Dial');
    const seq = r.send(T.CreateCircuitV2, [[11, Buffer.from(dialToken)], [12, strings([fp(client.cert)])], [14, Buffer.from(client.token)], [10, bytesMap([[1003, Buffer.alloc(32, 6)]])]]);
    const err = await r.replyTo(seq);
    expect(err.type).toBe(T.Error);
    expect(err.body.toString()).toMatch(/none on a router reachable from router 'df-upstream-2': no chain of links joins them/);
    expect(err.headers.get(1014)!.readUInt32LE(0)).toBe(8);
    await failed(service).toMatchObject({ failure_cause: 'NO_PATH', client_id: client.id, path: { nodes: [router.id] } });
    await expect.poll(() => loggedFor('df-emb'), { timeout: 3000 }).toHaveLength(1);
    expect(loggedFor('df-emb')[0]).toMatchObject({ identity: 'df-client', router: 'df-upstream-2', cause: 'NO_PATH' });
    h.close();
    r.close();
  });
});
