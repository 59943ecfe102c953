// `ztc metrics [NAME...]`: the controller's Prometheus metrics (GET /metrics, for admins) without curl
// and a token: the samples, one a line, optionally only those whose names start with the names given;
// -o json|yaml as {name, labels, value} objects; --raw the exposition text as served (with # HELP/# TYPE).
import { Command } from 'commander';
import { parseFormat, print } from '../output.js';
import { CliError, expectOk } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { withTransport } from './resources.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of Prometheus' text exposition format (comments and blank lines skipped). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

export function metricsCommand(): Command {
  return targetOptions(new Command('metrics').description("the controller's Prometheus metrics: requests, logins, enrollments, sessions, the data plane (those whose names start with NAME...)"))
    .argument('[name...]', 'only metrics whose names start with one of these, e.g. ztc_logins')
    .option('--raw', 'the exposition text as served, for a Prometheus parser')
    .action(async (names: string[], opts: CommonOpts & { raw?: boolean }) => {
      const format = parseFormat(opts.output);
      if (opts.dataDir || opts.config) throw new CliError('Metrics are counted by the running controller: log in to it (ztc login URL) and run ztc metrics without --data-dir');
      const reply = await withTransport(opts, async (t) => t.request('GET', '/metrics', undefined, { accept: 'text/plain' }));
      if (reply.status === 404) throw new CliError('The controller counts no metrics (it runs with --no-metrics)');
      expectOk(reply, 'Reading the metrics');
      const wanted = (name: string) => !names.length || names.some((n) => name.startsWith(n));
      if (opts.raw) {
        const lines = reply.text.split('\n').filter((l) => {
          if (!l) return false;
          const name = l.startsWith('# ') ? l.split(' ')[2] : /^[^{\s]+/.exec(l)?.[0];
          return wanted(name ?? '');
        });
        return void process.stdout.write(lines.join('\n') + (lines.length ? '\n' : ''));
      }
      const samples = parseExposition(reply.text).filter((s) => wanted(s.name));
      if (format !== 'table') return print(samples, format);
      if (!samples.length) return void process.stdout.write(`no metric${names.length ? ` starts with ${names.join(' or ')}` : ''}\n`);
      const line = (s: Sample) => {
        const labels = Object.entries(s.labels).map(([k, v]) => `${k}=${v}`).join(', ');
        return `${s.name}${labels ? `{${labels}}` : ''}`;
      };
      const width = Math.min(100, Math.max(...samples.map((s) => line(s).length)));
      process.stdout.write(samples.map((s) => `${line(s).padEnd(width)}  ${s.value}`).join('\n') + '\n');
    });
}
