// How long a revoked grant's live traffic lasts (issue 41: within 2 s), measured where the tests only
// hold a bound: a client's circuit through the embedded router to an echo host, its Dial policy deleted,
// timed from the API's answer to the client's StateClosed, over ROUNDS rounds (a new policy, session and
// circuit each). The tests assert the bound on whatever machine runs them; this says what it is.
import { CT, H, le32 } from '../test/peers/edge-sdk.js';
import { call, login, ok, startServer, stopServer, tempDir } from './http.js';
import { dial, echoHost, member, pct, peer } from './relay.js';

type Row = [string, string, string];
const M = '/edge/management/v1';
const C = '/edge/client/v1';
const ROUNDS = Number(process.env.BENCH_ACCESS_ROUNDS ?? 20);

export async function accessLossRows(): Promise<Row[]> {
  const dir = tempDir();
  const server = await startServer(dir);
  const base = server.url;
  const admin = await login(base);
  const routers = (await ok(call(base, 'GET', `${M}/edge-routers?limit=10`, { token: admin }), 'routers')).data as { supportedProtocols: { tls: string } }[];
  const port = Number(routers[0].supportedProtocols.tls.split(':').pop());
  const body = (name: string, kind: string, roles: Record<string, string[]>) => ({ name, semantic: 'AnyOf', ...(kind ? { type: kind } : {}), ...roles });
  await ok(call(base, 'POST', `${M}/edge-router-policies`, { token: admin, body: body('all', '', { identityRoles: ['#all'], edgeRouterRoles: ['#all'] }) }), 'erp');
  await ok(call(base, 'POST', `${M}/service-edge-router-policies`, { token: admin, body: body('all', '', { serviceRoles: ['#all'], edgeRouterRoles: ['#all'] }) }), 'serp');
  const service = (await ok(call(base, 'POST', `${M}/services`, { token: admin, body: { name: 'access-echo', encryptionRequired: false, roleAttributes: ['access'] } }), 'service')).data.id as string;
  await ok(call(base, 'POST', `${M}/service-policies`, { token: admin, body: body('bind', 'Bind', { identityRoles: ['#access-hosts'], serviceRoles: ['#access'] }) }), 'bind');
  const hostM = await member(base, admin, 'access-host', ['access-hosts']);
  const clientM = await member(base, admin, 'access-client', ['access-clients']);
  const session = async (token: string, type: string) => (await ok(call(base, 'POST', `${C}/sessions`, { token, body: { serviceId: service, type } }), `${type} session`)).data.token as string;
  const host = await echoHost(port, hostM, await session(hostM.token, 'Bind'), dir);
  const client = await peer(port, clientM);

  const fromAnswer: number[] = [];
  const fromRequest: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const policy = (await ok(call(base, 'POST', `${M}/service-policies`, { token: admin, body: body(`dial-${round}`, 'Dial', { identityRoles: ['#access-clients'], serviceRoles: ['#access'] }) }), 'dial policy')).data.id as string;
    const { connId } = await dial(client, await session(clientM.token, 'Dial'));
    const closed = client.next((f) => f.type === CT.StateClosed && f.headers.get(H.ConnId)?.readUInt32LE(0) === connId, 30_000).then(() => performance.now());
    // The circuit carries data before the grant goes (the echo answers).
    client.send(CT.Data, [[H.ConnId, le32(connId)], [H.Seq, le32(0)]], Buffer.from('still here'));
    await client.next((f) => f.type === CT.Data && f.headers.get(H.ConnId)?.readUInt32LE(0) === connId, 10_000);
    const asked = performance.now();
    await ok(call(base, 'DELETE', `${M}/service-policies/${policy}`, { token: admin }), 'delete the Dial policy');
    const answered = performance.now();
    const at = await closed;
    fromAnswer.push(at - answered);
    fromRequest.push(at - asked);
  }
  client.close();
  host.kill('SIGTERM');
  await stopServer(server);
  const ms = (xs: number[], p: number) => `${pct(xs, p).toFixed(0)} ms`;
  return [
    [`access loss: Dial policy deleted -> live circuit closed, ${ROUNDS} rounds, from the API's answer`, `p50 ${ms(fromAnswer, 50)}  max ${ms(fromAnswer, 100)}`, `goal max < 2000 ms: ${Math.max(...fromAnswer) < 2000 ? 'met' : 'MISSED'}`],
    ['access loss: the same, from the DELETE request', `p50 ${ms(fromRequest, 50)}  max ${ms(fromRequest, 100)}`, ''],
  ];
}
