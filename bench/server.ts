// A server for the benchmarks, in its own process so the load generator does not share its CPU time.
//   node dist/bench/server.js hello PORT         bare fastify over HTTPS, same certificate
//   node dist/bench/server.js tls-echo PORT DATADIR   a plain TLS echo server (the ceiling of the relay's path)
//   node dist/bench/server.js ztc PORT DATADIR [DB]   the controller (DB: a postgres:// URL)
//   node dist/bench/server.js ztc-limited PORT DATADIR [DB]   the same with a login limit of 30 a minute per address
//   node dist/bench/server.js ztc-observed PORT DATADIR [DB]  metrics on and an events file (DATADIR/events.jsonl)
//   node dist/bench/server.js ztc-unobserved PORT DATADIR [DB]  metrics off (--no-metrics), no events file
import tls from 'node:tls';
import fastify from 'fastify';
import { loadConfig } from '../src/config.js';
import { loadOrCreatePki } from '../src/model/pki/pki.js';
import { startController, type Running } from '../src/server/controller.js';
import { loggerOptions } from '../src/server/logging.js';
import { traceLoop } from './loop-trace.js';

let running: Running | undefined;
const stopTrace = process.env.BENCH_LOOP_TRACE ? traceLoop() : undefined;

const [kind, port, dataDir, db] = process.argv.slice(2);
if (kind === 'hello') {
  const pki = await loadOrCreatePki(dataDir, ['localhost']);
  const app = fastify({ https: { key: pki.serverKeyPem, cert: pki.serverPem + pki.intermediatePem } });
  app.get('/', async () => ({ hello: 'world' }));
  await app.listen({ port: Number(port), host: '127.0.0.1' });
} else if (kind === 'tls-echo') {
  const pki = await loadOrCreatePki(dataDir, ['localhost']);
  const server = tls.createServer({ key: pki.serverKeyPem, cert: pki.serverPem + pki.intermediatePem }, (s) => s.pipe(s));
  await new Promise<void>((r) => server.listen(Number(port), '127.0.0.1', () => r()));
} else {
  // A limit low enough to be reached within one measure, so the flood meets it.
  // The ctrl bench connects 500 routers from one loopback address: above the per-address cap, which
  // real routers (one address each) never meet.
  const limits = kind === 'ztc-limited' ? { authRateLimitPerMinute: 30 } : { authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0, maxConnectionsPerAddress: 2000 };
  // The observability bench (bench/observability.ts): the same controller with metrics and events on, and off.
  // BENCH_OBS_PARTS (metrics,events,subscriber by default) turns parts on alone, to find which one costs.
  const parts = (process.env.BENCH_OBS_PARTS ?? 'metrics,events').split(',');
  const observed = kind === 'ztc-observed' ? { metrics: parts.includes('metrics'), eventsFile: parts.includes('events') ? 'events.jsonl' : '' } : kind === 'ztc-unobserved' ? { metrics: false, eventsFile: '' } : {};
  // Warnings and errors to stderr (the bench's own), so an unexpected answer can be explained.
  running = await startController(loadConfig({ dataDir, db: db || '', port: Number(port), bind: '127.0.0.1', adminPassword: 'bench-password', hostnames: 'localhost', routerPort: 0, ctrlPort: 0, ...limits, ...observed }, {}), { logger: loggerOptions('warn', process.stderr) });
}
// The ports the OS gave the data plane, for benches that play routers (bench/ctrl.ts).
process.stdout.write(`ready ${JSON.stringify({ ctrlPort: running?.fabric?.ctrlPort })}\n`);
for (const s of ['SIGINT', 'SIGTERM'] as const)
  process.once(s, () => {
    stopTrace?.();
    process.exit(0);
  });
