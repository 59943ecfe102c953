// How long a revoked grant's live traffic lasts (issue 41: within 2 s), measured where the tests only
// hold a bound: a client's circuit through the embedded router to an echo host, its Dial policy deleted,
// timed from the API's answer to the client's StateClosed, over ROUNDS rounds (a new policy, session and
// circuit each). The tests assert the bound on whatever machine runs them; this says what it is.
import { CT, H, le32 } from '../test/peers/edge-sdk.js';
import { call, ok, stopServer } from './http.js';
import { dial, echoNetwork, member, pct, peer } from './relay.js';

type Row = [string, string, string];
const M = '/edge/management/v1';
const ROUNDS = Number(process.env.BENCH_ACCESS_ROUNDS ?? 20);

export async function accessLossRows(): Promise<Row[]> {
  const { server, base, admin, port, session, host } = await echoNetwork('access', [['access-echo', false]], { dialPolicy: false });
  const clientM = await member(base, admin, 'access-client', ['access-clients']);
  const client = await peer(port, clientM);

  const fromAnswer: number[] = [];
  const fromRequest: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const policy = (await ok(call(base, 'POST', `${M}/service-policies`, { token: admin, body: { name: `dial-${round}`, type: 'Dial', semantic: 'AnyOf', identityRoles: ['#access-clients'], serviceRoles: ['#access'] } }), 'dial policy')).data.id as string;
    const { connId } = await dial(client, await session(clientM, 'Dial'));
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
