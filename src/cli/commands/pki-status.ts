// `ztc pki status` (every certificate the controller holds or issued, with days left) and `ztc status`
// (the controller's version and the health of its own certificates), from GET /pki/status.
import { Command } from 'commander';
import { parseFormat, print } from '../output.js';
import { CliError, expectOk } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { addPkiTools } from './pki-tools.js';
import { withTransport } from './resources.js';

const API = '/edge/management/v1';

interface CertStatus {
  kind: string;
  name: string;
  notAfter: string | null;
  daysLeft: number | null;
  fingerprint: string;
  /** When one of the controller's own renews by itself (null: the root, and what it issued to others). */
  renewsAt: string | null;
}
interface PkiStatus {
  certificates: CertStatus[];
  warnings: string[];
}

const warn = (lines: string[]) => lines.forEach((w) => process.stderr.write(`warning: ${w}\n`));

export function pkiCommand(): Command {
  const cmd = new Command('pki').description("certificates: the controller's and those it issued, and a CA to try third-party CA auth with");
  targetOptions(cmd.command('status').description('every certificate the controller holds or issued (its own, trusted CAs, identities\' and routers\' certificates) with days left, and when each of its own renews by itself'))
    .option('--own', 'only the controller\'s own (root, intermediate, server, signer, replaced signers still published, edge router)')
    .option('--expiring <days>', 'only certificates with fewer days left than this')
    .action(async (opts: CommonOpts & { own?: boolean; expiring?: string }) => {
      const format = parseFormat(opts.output);
      const within = opts.expiring === undefined ? undefined : Number(opts.expiring);
      if (within !== undefined && !Number.isFinite(within)) throw new CliError(`--expiring: expected a number of days, got '${opts.expiring}'`);
      const status = await withTransport(opts, async (t) => expectOk(await t.request('GET', `${API}/pki/status${opts.own ? '?own=true' : ''}`), 'Reading the certificates')?.data as PkiStatus);
      const certs = within === undefined ? status.certificates : status.certificates.filter((c) => c.daysLeft !== null && c.daysLeft < within);
      if (format !== 'table') return await print({ certificates: certs, warnings: status.warnings }, format);
      // renews: when one of the controller's own renews by itself; "never" for the root (replaced by no one but you).
      await print(
        certs.map((c) => ({ ...c, notAfter: c.notAfter ?? '-', daysLeft: c.daysLeft ?? '-', renews: c.renewsAt ? `at ${c.renewsAt}` : c.kind === 'root' ? 'never (by itself)' : '-' })),
        'table',
        { columns: ['kind', 'name', 'notAfter', 'daysLeft', 'renews', 'fingerprint'], whole: ['fingerprint'] },
      );
      warn(status.warnings);
    });
  targetOptions(cmd.command('renew').description('replace the server certificate, the intermediate CA (and so the server certificate) or the signing key now, as the controller does by itself when a third of their lifetime is left; the root stays'))
    .argument('<what>', 'server, intermediate or signer')
    .action(async (what: string, opts: CommonOpts) => {
      const format = parseFormat(opts.output);
      if (!['server', 'intermediate', 'signer'].includes(what)) throw new CliError(`Cannot renew '${what}': choose server, intermediate or signer (the root is what clients trust, so it is never replaced here)`);
      const result = await withTransport(opts, async (t) => expectOk(await t.request('POST', `${API}/pki/renew`, { target: what }), `Renewing the ${what}`)?.data as { renewed: CertStatus[]; clients: string; servedNow: boolean });
      if (format !== 'table') return await print(result, format);
      await print(result.renewed.map((c) => ({ ...c, renews: c.renewsAt ? `at ${c.renewsAt}` : '-' })), 'table', { columns: ['kind', 'name', 'notAfter', 'daysLeft', 'renews', 'fingerprint'], whole: ['fingerprint'] });
      process.stdout.write(`clients: ${result.clients}\n`);
      if (!result.servedNow) process.stdout.write('local mode: a controller already running on this data dir takes the new certificates up within a minute, without a restart\n');
    });
  addPkiTools(cmd);
  return cmd;
}

export function statusCommand(): Command {
  return targetOptions(new Command('status').description('the controller\'s version and health: when each of its own certificates renews, and warnings 30 days before one expires')).action(async (opts: CommonOpts) => {
    const format = parseFormat(opts.output);
    const info = await withTransport(opts, async (t) => {
      const version = (expectOk(await t.request('GET', '/version'), 'Reading the controller version')?.data as { version: string }).version;
      const pki = expectOk(await t.request('GET', `${API}/pki/status?own=true`), 'Reading the certificates')?.data as PkiStatus;
      return {
        target: t.describe,
        controller: version,
        // The signer's days are the server certificate's: shown once, as the server's.
        certificates: Object.fromEntries(pki.certificates.filter((c) => c.daysLeft !== null && c.kind !== 'signer').map((c) => [c.kind, `${c.daysLeft} days left (${c.notAfter})${c.renewsAt ? `, renews at ${c.renewsAt}` : ''}`])),
        rootFingerprint: `SHA-256 ${pki.certificates.find((c) => c.kind === 'root')?.fingerprint ?? '?'}`,
        warnings: pki.warnings,
      };
    });
    if (format !== 'table') return await print(info, format);
    await print({ target: info.target, controller: info.controller, ...info.certificates, 'root CA': info.rootFingerprint, health: info.warnings.length ? `${info.warnings.length} warning(s)` : 'ok' }, 'table', { whole: ['root CA'] });
    warn(info.warnings);
  });
}
