// The metrics port (--metrics-port): plain HTTP with /metrics and /health-checks only, no
// authentication, for a Prometheus or load balancer on a trusted network. Nothing else is served here,
// so opening it exposes counts and verdicts, never data or an operation.
import http from 'node:http';
import type { Health } from './health.js';
import { healthAnswer } from './health.js';
import type { Metrics } from './metrics.js';

export async function startOpsListener(o: { host: string; port: number; metrics: Metrics | undefined; health: Health }): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://ops');
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain', 'only GET\n', { allow: 'GET, HEAD' });
      if (url.pathname === '/metrics' && o.metrics) {
        const { contentType, body } = await o.metrics.exposition();
        return send(200, contentType, body);
      }
      if (url.pathname === '/health-checks' || url.pathname.startsWith('/health-checks/')) {
        const answer = await healthAnswer(o.health, url.pathname, url.searchParams.get('type') === 'short');
        if (answer) return send(answer.status, 'application/json', JSON.stringify(answer.body) + '\n');
      }
      return send(404, 'text/plain', o.metrics ? 'not found: this port serves /metrics and /health-checks\n' : 'not found: metrics are off (--no-metrics); this port serves /health-checks\n');
    })().catch(() => send(500, 'text/plain', 'could not collect\n'));

    function send(status: number, type: string, body: string, headers: Record<string, string> = {}) {
      if (res.headersSent) return void res.end();
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
      res.end(req.method === 'HEAD' ? undefined : body);
    }
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
