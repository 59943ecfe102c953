// An access log that names the grant (edge#227, issue 47 item 4): a service session made names the
// service policies, edge router policies and service edge router policies that granted it and the
// posture checks that passed; a refusal names what was missing; the circuits a session opens (on the
// embedded router and on an upstream router) name the session and their grant at the router they came
// in by. In the events stream and, for sessions, in the audit (by service as the entity, by identity as
// the actor). Against a controller over TLS with its data plane, SDK peers with real certificates.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encode, decode } from '../../src/fabric/channel/protobuf.js';
import { Schemas } from '../../src/fabric/ctrl/messages.js';
import type { ZtcEvent } from '../../src/model/events/types.js';
import { CLIENT } from '../helpers/controller.js';
import { startNetwork, type Member, type TestNetwork } from '../helpers/network.js';
import { bytesMap, connectRouter, enrollRouter, fp, i32, strings, T } from '../peers/ctrl-router.js';
import { CT, H, le32, one } from '../peers/edge-sdk.js';

let n: TestNetwork;
const heard: ZtcEvent[] = [];
beforeAll(async () => {
  n = await startNetwork();
  n.c.running.ctx.events.subscribe((e) => heard.push(e));
}, 60_000);
afterAll(() => n?.close());

type SessionEv = Extract<ZtcEvent, { namespace: 'edge.sessions' }>;
type CircuitEv = Extract<ZtcEvent, { namespace: 'fabric.circuits' }>;
const sessionEvents = (identityId: string) => heard.filter((e): e is SessionEv => e.namespace === 'edge.sessions' && e.identity_id === identityId);
const circuitEvents = (circuitId: string) => heard.filter((e): e is CircuitEv => e.namespace === 'fabric.circuits' && e.circuit_id === circuitId);
const id = async (path: string, name: string) => ((await n.api('GET', `${path}?filter=${encodeURIComponent(`name = "${name}"`)}`)).body.data[0] as { id: string }).id;

interface Setup {
  service: string;
  host: Member;
  client: Member;
  dial: string;
}

async function setup(name: string, o: { postureCheck?: string } = {}): Promise<Setup> {
  const service = await n.service(name);
  if (o.postureCheck) {
    const dial = await id('/service-policies', `${name}-dial`);
    await n.api('PATCH', `/service-policies/${dial}`, { postureCheckRoles: [`@${o.postureCheck}`] });
  }
  return { service, host: await n.identity(`${name}-host`, [`${name}-hosts`]), client: await n.identity(`${name}-client`, [`${name}-clients`]), dial: await id('/service-policies', `${name}-dial`) };
}

describe('sessions', () => {
  it('made: the event names the policies of each kind, the routers and the checks that passed; the audit keeps it', async () => {
    const check = (await n.api('POST', '/posture-checks', { name: 'log-domain', typeId: 'DOMAIN', domains: ['corp.example'] })).body.data.id as string;
    const s = await setup('log-web', { postureCheck: check });
    expect((await n.c.call('POST', `${CLIENT}/posture-response`, { token: s.client.token, body: { id: check, typeId: 'DOMAIN', domain: 'corp.example' } })).status).toBe(201);
    const made = await n.c.call('POST', `${CLIENT}/sessions`, { token: s.client.token, body: { serviceId: s.service, type: 'Dial' } });
    expect(made.status, made.text).toBe(201);
    const erp = await id('/edge-router-policies', 'all');
    const serp = await id('/service-edge-router-policies', 'all');
    const event = sessionEvents(s.client.id).find((e) => e.event_type === 'created')!;
    expect(event).toMatchObject({
      id: made.body.data.id, session_type: 'Dial', identity_name: 'log-web-client', service_id: s.service, service_name: 'log-web',
      granted_by: {
        service_policies: [{ id: s.dial, name: 'log-web-dial' }],
        posture_checks: [{ id: check, name: 'log-domain', type: 'DOMAIN' }],
        edge_router_policies: [{ id: erp, name: 'all' }],
        service_edge_router_policies: [{ id: serp, name: 'all' }],
        edge_routers: [{ id: n.routerId, name: expect.any(String) }],
      },
    });
    expect(event.missing).toBeUndefined();
    // Kept: under the service (who reached it) and under the identity as the actor (what it reached).
    await n.c.running.ctx.events.flush();
    const byService = (await n.api('GET', `/audit-events?entity=log-web&types=session`)).body.data as SessionEv[];
    expect(byService).toEqual([expect.objectContaining({ event_type: 'created', id: made.body.data.id, granted_by: event.granted_by })]);
    const byActor = (await n.api('GET', `/audit-events?actor=log-web-client&types=session`)).body.data as SessionEv[];
    expect(byActor.map((e) => e.id)).toEqual([made.body.data.id]);
    // No token in it.
    expect(JSON.stringify(byService)).not.toContain(made.body.data.token);
  });

  it('refused: the event says what was missing, a service policy or passing posture checks', async () => {
    const check = (await n.api('POST', '/posture-checks', { name: 'log-mac', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] })).body.data.id as string;
    const s = await setup('log-refused', { postureCheck: check });
    // Bind: no Bind policy names the client.
    expect((await n.c.call('POST', `${CLIENT}/sessions`, { token: s.client.token, body: { serviceId: s.service, type: 'Bind' } })).status).toBe(401);
    // Dial: its policy's check fails.
    expect((await n.c.call('POST', `${CLIENT}/sessions`, { token: s.client.token, body: { serviceId: s.service, type: 'Dial' } })).body.error.code).toBe('INVALID_POSTURE');
    // A stranger: no policy at all (the service is hidden from it: 404).
    const stranger = await n.identity('log-stranger');
    expect((await n.c.call('POST', `${CLIENT}/sessions`, { token: stranger.token, body: { serviceId: s.service, type: 'Dial' } })).status).toBe(404);
    const refused = sessionEvents(s.client.id).filter((e) => e.event_type === 'refused');
    expect(refused.find((e) => e.session_type === 'Bind')).toMatchObject({ id: '', service_name: 'log-refused', missing: [{ code: 'NO_SERVICE_POLICY', message: "no Bind service policy grants identity 'log-refused-client' service 'log-refused'" }] });
    expect(refused.find((e) => e.session_type === 'Dial')).toMatchObject({
      missing: [{ code: 'POSTURE_CHECKS_FAILING', message: 'posture checks failing: log-mac', policies: [{ id: s.dial, name: 'log-refused-dial', posture_checks: [{ id: check, name: 'log-mac', type: 'MAC' }] }] }],
    });
    expect(sessionEvents(stranger.id)).toEqual([expect.objectContaining({ event_type: 'refused', missing: [expect.objectContaining({ code: 'NO_SERVICE_POLICY' })] })]);
    await n.c.running.ctx.events.flush();
    const audit = (await n.api('GET', `/audit-events?entity=log-refused&types=session`)).body.data as SessionEv[];
    expect(audit.map((e) => `${e.event_type} ${e.session_type} ${e.missing![0].code}`).sort()).toEqual(['refused Bind NO_SERVICE_POLICY', 'refused Dial NO_SERVICE_POLICY', 'refused Dial POSTURE_CHECKS_FAILING']);
  });
});

describe('circuits', () => {
  it('on the embedded router: created and deleted name the dialing session and what granted it there', async () => {
    const s = await setup('log-circuit');
    const h = await n.peer(s.host);
    const bound = await h.replyTo(h.send(CT.Bind, [[H.ConnId, le32(1)], [H.Seq, le32(0)], [H.RouterProvidedConnId, one]], Buffer.from(await n.session(s.host, s.service, 'Bind'))));
    expect(bound.type).toBe(CT.StateConnected);
    const d = await n.peer(s.client);
    const dialToken = await n.session(s.client, s.service, 'Dial');
    const session = sessionEvents(s.client.id).find((e) => e.event_type === 'created')!;
    const connect = d.send(CT.Connect, [[H.ConnId, le32(1)], [H.Seq, le32(0)]], Buffer.from(dialToken));
    const dialFrame = await h.next((f) => f.type === CT.Dial);
    const hostConnId = dialFrame.headers.get(H.RouterProvidedConnId)!.readUInt32LE(0);
    h.send(CT.DialSuccess, [[H.ConnId, le32(1)], [H.ReplyFor, Buffer.from(new Int32Array([dialFrame.seq]).buffer)]], le32(hostConnId));
    expect((await d.replyTo(connect)).type).toBe(CT.StateConnected);
    await expect.poll(() => heard.find((e): e is CircuitEv => e.namespace === 'fabric.circuits' && e.event_type === 'created' && e.service_id === s.service), { timeout: 3000 }).toBeTruthy();
    const created = heard.find((e): e is CircuitEv => e.namespace === 'fabric.circuits' && e.event_type === 'created' && e.service_id === s.service)!;
    expect(created).toMatchObject({
      client_id: s.client.id, session_id: session.id,
      granted_by: {
        service_policies: [{ id: s.dial, name: 'log-circuit-dial' }],
        posture_checks: [],
        edge_router_policies: [{ name: 'all' }],
        service_edge_router_policies: [{ name: 'all' }],
        edge_routers: [{ id: n.routerId }],
      },
    });
    d.close();
    h.close();
    await expect.poll(() => circuitEvents(created.circuit_id).map((e) => e.event_type), { timeout: 3000 }).toEqual(['created', 'deleted']);
    expect(circuitEvents(created.circuit_id)[1]).toMatchObject({ session_id: session.id, granted_by: created.granted_by });
  });

  it('on an upstream router: the circuit names its ingress router and the policies that give it to the dialer and the service', async () => {
    const s = await setup('log-upstream');
    const router = await enrollRouter(n, 'log-upstream-router');
    const { p } = await connectRouter(n.c.running.fabric!.ctrlPort!, router);
    const hello = await p.next((f) => f.type === T.ServerHello);
    p.send(T.ClientHello, [[1, i32(hello.seq)]], encode(Schemas.ClientHello, { version: 'v1.1.10', hostname: 'localhost', protocols: ['tls'], listeners: [] }));
    await p.next((f) => f.type === T.ApiSessionAdded);
    const bind = await n.session(s.host, s.service, 'Bind');
    const made = await p.replyTo(p.send(T.CreateTerminatorV2, [], encode(Schemas.CreateTerminatorV2Request, { address: 'log-upstream-t', sessionToken: bind, fingerprints: [fp(s.host.cert)] })));
    expect(decode(Schemas.CreateTerminatorV2Response, made.body).result ?? 0).toBe(0);
    const dial = await n.session(s.client, s.service, 'Dial');
    const session = sessionEvents(s.client.id).find((e) => e.event_type === 'created')!;
    const seq = p.send(T.CreateCircuitV2, [[11, Buffer.from(dial)], [12, strings([fp(s.client.cert)])], [14, Buffer.from(s.client.token)], [10, bytesMap([])]]);
    const route = decode(Schemas.Route, (await p.next((f) => f.type === T.Route)).body);
    p.send(T.RouteResult, [[1101, le32(0)], [1102, Buffer.from([1])]], Buffer.from(route.circuitId));
    expect((await p.replyTo(seq)).type).toBe(T.CreateCircuitV2Response);
    await expect.poll(() => circuitEvents(route.circuitId).find((e) => e.event_type === 'created'), { timeout: 3000 }).toMatchObject({
      session_id: session.id,
      granted_by: { service_policies: [{ id: s.dial }], edge_router_policies: [{ name: 'all' }], service_edge_router_policies: [{ name: 'all' }], edge_routers: [{ id: router.id, name: 'log-upstream-router' }] },
    });
    p.close();
  });
});
