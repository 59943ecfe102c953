// `ztc policy-advisor identities [NAME] [--service S]` and `ztc policy-advisor services [NAME]`: why a
// pair can or cannot connect, from GET /policy-advisor (model/policy/advisor.ts).
import { Command } from 'commander';
import { parseFormat, print } from '../output.js';
import { expectOk } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { withTransport } from './resources.js';

const API = '/edge/management/v1';

interface Action {
  allowed: boolean;
  reasons: { code: string; message: string }[];
}
interface Pair {
  identity: { id: string; name: string };
  service: { id: string; name: string };
  dial: Action;
  bind: Action;
  edgeRouters: { name: string; usable: boolean }[];
}

async function fetchPairs(opts: CommonOpts, query: { identity?: string; service?: string }): Promise<Pair[]> {
  const q = new URLSearchParams();
  if (query.identity) q.set('identity', query.identity);
  if (query.service) q.set('service', query.service);
  return withTransport(opts, async (t) => (expectOk(await t.request('GET', `${API}/policy-advisor?${q}`), 'Asking the policy advisor')?.data as Pair[]) ?? []);
}

/** The table, then for each pair that cannot do something, every reason (one line each, dial/bind merged when the same). */
async function printPairs(pairs: Pair[], format: ReturnType<typeof parseFormat>) {
  if (format !== 'table') return await print(pairs, format);
  const yesNo = (a: Action) => (a.allowed ? 'yes' : 'no');
  const rows = pairs.map((p) => ({
    identity: p.identity.name,
    service: p.service.name,
    dial: yesNo(p.dial),
    bind: yesNo(p.bind),
    edgeRouters: p.edgeRouters.map((r) => (r.usable ? r.name : `${r.name} (not ready)`)).join(', ') || '-',
  }));
  await print(rows, 'table', { columns: ['identity', 'service', 'dial', 'bind', 'edgeRouters'] });
  const lines: string[] = [];
  for (const p of pairs) {
    if (p.dial.allowed && p.bind.allowed) continue;
    const byMessage = new Map<string, string[]>();
    for (const kind of ['dial', 'bind'] as const) for (const r of p[kind].reasons) (byMessage.get(r.message) ?? byMessage.set(r.message, []).get(r.message)!).push(kind);
    lines.push(`${p.identity.name} -> ${p.service.name}`, ...[...byMessage].map(([message, kinds]) => `  ${kinds.join(', ')}: ${message}`));
  }
  if (lines.length) process.stdout.write(`\n${lines.join('\n')}\n`);
}

export function policyAdvisorCommand(): Command {
  const cmd = new Command('policy-advisor').description('why an identity can or cannot dial or bind a service: policies, edge routers, enrollment, posture, MFA');
  targetOptions(cmd.command('identities').description('every identity (or the named one) against every service (or --service)'))
    .argument('[identity]', 'identity id or name')
    .option('--service <service>', 'only this service (id or name)')
    .action(async (identity: string | undefined, opts: CommonOpts & { service?: string }) => {
      const format = parseFormat(opts.output);
      await printPairs(await fetchPairs(opts, { identity, service: opts.service }), format);
    });
  targetOptions(cmd.command('services').description('every service (or the named one) against every identity'))
    .argument('[service]', 'service id or name')
    .option('--identity <identity>', 'only this identity (id or name)')
    .action(async (service: string | undefined, opts: CommonOpts & { identity?: string }) => {
      const format = parseFormat(opts.output);
      const pairs = await fetchPairs(opts, { service, identity: opts.identity });
      pairs.sort((a, b) => a.service.name.localeCompare(b.service.name) || a.identity.name.localeCompare(b.identity.name));
      await printPairs(pairs, format);
    });
  return cmd;
}
