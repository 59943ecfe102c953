// The log as a person at a terminal reads it: one short line per request (time, method, path,
// status, duration) and the message of anything else, instead of pino's JSON lines. It reads the
// JSON that pino writes, so what is logged (and redacted, see logging.ts) stays the same.
import { Writable } from 'node:stream';

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
const time = (ms: number) => new Date(ms).toISOString().slice(11, 19);
/** Fields every line has, or that the short form already shows. */
const SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'reqId', 'req', 'res', 'responseTime']);

export function consoleLogStream(out: NodeJS.WritableStream = process.stdout): Writable {
  const pending = new Map<string, { method: string; url: string }>();
  let rest = '';
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      rest += chunk.toString('utf8');
      const lines = rest.split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        const text = line.trim() ? format(line) : undefined;
        if (text) out.write(text + '\n');
      }
      done();
    },
  });

  function format(line: string): string | undefined {
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return line;
    }
    const req = e.req as { method?: string; url?: string } | undefined;
    const reqId = String(e.reqId ?? '');
    if (e.msg === 'incoming request' && req) {
      pending.set(reqId, { method: req.method ?? '', url: req.url ?? '' });
      return undefined;
    }
    // The banner already says where the server listens.
    if (typeof e.msg === 'string' && e.msg.startsWith('Server listening at')) return undefined;
    if (e.msg === 'request completed') {
      const r = pending.get(reqId);
      pending.delete(reqId);
      const status = (e.res as { statusCode?: number } | undefined)?.statusCode ?? '';
      return `${time(Number(e.time))} ${r?.method ?? '?'} ${r?.url ?? '?'} ${status} ${Number(e.responseTime ?? 0).toFixed(1)} ms`;
    }
    const level = LEVELS[Number(e.level)] ?? String(e.level);
    const extra = Object.entries(e)
      .filter(([k]) => !SHOWN.has(k))
      .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
      .join(' ');
    const where = req?.url ? ` (${req.method} ${req.url})` : '';
    return `${time(Number(e.time))} ${level === 'info' ? '' : level.toUpperCase() + ' '}${String(e.msg ?? '')}${where}${extra ? ' ' + extra : ''}`;
  }
}
