// Bursts of crypto work (enrollments, logins) against one controller while another client keeps
// calling: its latency during the burst beside its latency when all is quiet.
import { newKeyAndCsr } from '../src/model/pki/csr.js';
import { call, concurrently, database, fmtSeries, login, ok, PASSWORD, sequential, startServer, stopServer, tempDir, type Series } from './http.js';

type Row = [string, string, string];
const M = '/edge/management/v1';
const C = '/edge/client/v1';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ENROLLMENTS = 250;
const AT_ONCE = 50;
const FLOOD_ADDRESSES = 8;
const FLOOD_PER_ADDRESS = 4;

export async function measureBursts(dbServer: string | undefined): Promise<Row[]> {
  const label = dbServer ? 'postgres' : 'sqlite';
  const server = await startServer(tempDir(), await database(dbServer));
  const url = server.url;
  const admin = await login(url);
  // The other client: its own address and connection, reading its identity one request at a time.
  const other = await login(url);
  const probe = () => call(url, 'GET', `${C}/current-identity`, { token: other, localAddress: '127.0.0.2' }).then((r) => r.status);

  const tokens: string[] = [];
  await concurrently(Array.from({ length: ENROLLMENTS }, (_, i) => i), 8, async (i) => {
    const id = (await ok(call(url, 'POST', `${M}/identities`, { token: admin, body: { name: `burst-${i}`, type: 'Device', isAdmin: false, enrollment: { ott: true } } }), 'create')).data.id;
    tokens.push((await ok(call(url, 'GET', `${M}/identities/${id}`, { token: admin }), 'read')).data.enrollment.ott.token);
  });
  const csrs = tokens.map(() => newKeyAndCsr('burst').csrPem);
  const floodUsers = Array.from({ length: FLOOD_ADDRESSES }, (_, i) => `flood-${i}`);
  for (const name of floodUsers) {
    const id = (await ok(call(url, 'POST', `${M}/identities`, { token: admin, body: { name, type: 'User', isAdmin: false } }), 'create')).data.id;
    await ok(call(url, 'POST', `${M}/authenticators`, { token: admin, body: { identityId: id, method: 'updb', username: name, password: PASSWORD } }), 'authenticator');
  }

  const quiet = await sequential(SECONDS, probe);
  let done = false;
  const statuses: number[] = [];
  const start = performance.now();
  const [, during] = await Promise.all([
    concurrently(tokens, AT_ONCE, async (token, i) => {
      statuses.push((await call(url, 'POST', `${C}/enroll/ott`, { body: { token, clientCsr: csrs[i] } })).status);
    }).finally(() => (done = true)),
    sequential(0, probe, { until: () => done, min: 20 }),
  ]);
  const burstSeconds = (performance.now() - start) / 1000;
  const enrolled = statuses.filter((s) => s === 200).length;

  // Logins from several addresses at once (as after a network outage), each as its own user.
  const counts = new Map<number, number>();
  const floodEnd = Date.now() + SECONDS * 1000;
  const [, duringFlood] = await Promise.all([
    Promise.all(floodUsers.flatMap((name, a) => Array.from({ length: FLOOD_PER_ADDRESS }, async () => {
      while (Date.now() < floodEnd) {
        const r = await call(url, 'POST', `${C}/authenticate?method=password`, { body: { username: name, password: PASSWORD }, localAddress: `127.0.0.${10 + a}` });
        counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
      }
    }))),
    sequential(SECONDS, probe),
  ]);
  await stopServer(server);
  const ratio = (s: Series) => `p99 ${(s.p99 / quiet.p99).toFixed(1)}x quiet`;
  const logins = [...counts].map(([s, n]) => `${n} × ${s}`).join(', ');
  return [
    [`[${label}] burst of ${ENROLLMENTS} ott enrollments, ${AT_ONCE} at once`, `${enrolled} of ${ENROLLMENTS} enrolled in ${burstSeconds.toFixed(1)} s (${(ENROLLMENTS / burstSeconds).toFixed(0)}/s)`, '-'],
    [`[${label}] another client, quiet`, fmtSeries(quiet), '-'],
    [`[${label}] another client, during the enrollments`, fmtSeries(during), ratio(during)],
    [`[${label}] login flood, ${FLOOD_ADDRESSES} addresses × ${FLOOD_PER_ADDRESS} at once, ${SECONDS} s`, `${logins} (${((counts.get(200) ?? 0) / SECONDS).toFixed(0)} logins/s)`, '-'],
    [`[${label}] another client, during the login flood`, fmtSeries(duringFlood), ratio(duringFlood)],
  ];
}
