// A large `POST /import` and the other clients of the controller meanwhile (issue 26, item 2): the
// import of BENCH_IMPORT_IDENTITIES identities (100,000 by default, about 8 MB of JSON) runs while
// another client asks for /version one request at a time, and a third logs in again and again. The
// goals: /version's p99 under 100 ms during the import, and logins keep working. On SQLite a login
// writes its API session, so it needs the one write lock: the import takes it a short transaction at a
// time (model/import-model.ts, applyBatched; for a large import on a thread of its own, import-thread.ts),
// and the logins' p99 says how long one waits. BENCH_IMPORT_COMPARE=1 runs it first as before that thread.
import { call, database, fmtSeries, login, ok, onSchedule, sequential, startServer, stopServer, tempDir } from './http.js';

type Row = [string, string, string];
const M = '/edge/management/v1';
const C = '/edge/client/v1';
const N = Number(process.env.BENCH_IMPORT_IDENTITIES ?? 100_000);

/** `variant` 'API thread': the whole import on the API thread, as before it had a thread of its own (import-thread.ts). */
export async function importLatencyRows(dbServer: string | undefined, variant?: 'API thread'): Promise<Row[]> {
  const label = `${dbServer ? 'postgres' : 'sqlite'}${variant ? `, ${variant}` : ''}`;
  // The controller's process reads its environment when it starts.
  const saved = process.env.ZTC_IMPORT_THREAD_MIN_BYTES;
  if (variant) process.env.ZTC_IMPORT_THREAD_MIN_BYTES = String(Number.MAX_SAFE_INTEGER);
  const server = await startServer(tempDir(), await database(dbServer)).finally(() => {
    if (saved === undefined) delete process.env.ZTC_IMPORT_THREAD_MIN_BYTES;
    else process.env.ZTC_IMPORT_THREAD_MIN_BYTES = saved;
  });
  try {
    const admin = await login(server.url);
    const doc = {
      ztcModel: 1,
      identities: Array.from({ length: N }, (_, i) => ({ name: `imported-${String(i).padStart(7, '0')}`, type: 'Device', isAdmin: false, roleAttributes: ['imported', `group-${i % 100}`] })),
    };
    const bytes = Buffer.byteLength(JSON.stringify(doc));
    console.error(`… [${label}] importing ${N} identities (${(bytes / 1e6).toFixed(1)} MB) while another client calls /version`);
    const quiet = await sequential(2, () => call(server.url, 'GET', '/version', { localAddress: '127.0.0.2' }).then((r) => r.status));
    const loginOnce = () => call(server.url, 'POST', `${C}/authenticate?method=password`, { localAddress: '127.0.0.3', body: { username: 'admin', password: 'bench-password' } }).then((r) => r.status);
    const quietLogins = await sequential(2, loginOnce);
    let done = false;
    const started = performance.now();
    const importing = ok(call(server.url, 'POST', `${M}/import`, { token: admin, body: doc }), 'import').finally(() => (done = true));
    const [imported, version, logins, sampled] = await Promise.all([
      importing,
      sequential(0, () => call(server.url, 'GET', '/version', { localAddress: '127.0.0.2' }).then((r) => r.status), { until: () => done }),
      sequential(0, loginOnce, { until: () => done }),
      // A fourth client: /version every 50 ms, timed from when each was due (the wait at a random moment).
      onSchedule(50, () => call(server.url, 'GET', '/version', { localAddress: '127.0.0.4' }).then((r) => r.status), () => done),
    ]);
    const seconds = (performance.now() - started) / 1000;
    return [
      [`[${label}] import of ${N} identities (${(bytes / 1e6).toFixed(1)} MB)`, `${seconds.toFixed(1)} s, ${imported.data.applied ? 'applied' : 'NOT applied'}`, '-'],
      [`[${label}]   another client's /version: quiet`, fmtSeries(quiet), '-'],
      [`[${label}]   another client's /version: during the import (${version.n} calls)`, fmtSeries(version), (version.p99 / quiet.p99).toFixed(1) + 'x'],
      [`[${label}]   /version every 50 ms, timed from when due (${sampled.n} calls)`, fmtSeries(sampled), (sampled.p99 / quiet.p99).toFixed(1) + 'x'],
      [`[${label}]   logins: quiet`, fmtSeries(quietLogins), '-'],
      [`[${label}]   logins during the import (${logins.n} calls)`, fmtSeries(logins), (logins.p99 / quietLogins.p99).toFixed(1) + 'x'],
    ];
  } finally {
    await stopServer(server);
  }
}
