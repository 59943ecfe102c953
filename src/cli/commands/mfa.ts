// `ztc mfa`: TOTP MFA of the logged-in identity (remote profiles only: the local admin has no session).
import { Command } from 'commander';
import { print, parseFormat } from '../output.js';
import { CliError, expectOk, openTransport } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';

const BASE = '/edge/management/v1/current-identity/mfa';

async function remote<T>(opts: CommonOpts, fn: (t: Awaited<ReturnType<typeof openTransport>>) => Promise<T>) {
  if (opts.dataDir || opts.config) throw new CliError('MFA belongs to a logged-in identity: use `ztc login` and run this without --data-dir');
  const t = await openTransport(opts);
  try {
    return await fn(t);
  } finally {
    await t.close();
  }
}

export function mfaCommand(): Command {
  const cmd = new Command('mfa').description('TOTP MFA of the logged-in identity');
  targetOptions(cmd.command('status').description('show the MFA enrollment')).action(async (opts: CommonOpts) => {
    const format = parseFormat(opts.output);
    await print((await remote(opts, async (t) => expectOk(await t.request('GET', BASE), 'Reading MFA')))?.data, format);
  });
  targetOptions(cmd.command('enable').description('start enrollment: shows a QR code for the authenticator app and the recovery codes; then run `ztc mfa verify CODE`'))
    .option('--qr <file>', 'also write the QR code as a PNG image to this file')
    .action(async (opts: CommonOpts & { qr?: string }) => {
      const format = parseFormat(opts.output);
      const d = await remote(opts, async (t) => {
        expectOk(await t.request('POST', BASE), 'Starting MFA enrollment');
        return expectOk(await t.request('GET', BASE), 'Reading MFA')?.data as { provisioningUrl: string; recoveryCodes: string[] };
      });
      // The QR code is drawn here from the provisioning URL: no second request, and the same picture.
      const { default: QRCode } = await import('qrcode');
      if (opts.qr) await QRCode.toFile(opts.qr, d.provisioningUrl, { type: 'png', margin: 2, scale: 6 });
      if (format !== 'table') return print(opts.qr ? { ...d, qrFile: opts.qr } : d, format);
      // A terminal gets colours for contrast; a pipe or file gets plain block characters.
      const qr = await QRCode.toString(d.provisioningUrl, { type: process.stdout.isTTY ? 'terminal' : 'utf8', small: true });
      process.stdout.write(
        `Scan this with your authenticator app${opts.qr ? ` (also saved as ${opts.qr})` : ''}, or enter the URL by hand:\n${qr}  ${d.provisioningUrl}\n` +
          `Recovery codes (keep them safe; each works once instead of a code):\n  ${d.recoveryCodes.join(' ')}\nThen confirm with: ztc mfa verify CODE\n`,
      );
    });
  targetOptions(cmd.command('verify').description('finish enrollment with a code from the app')).argument('<code>').action(async (code: string, opts: CommonOpts) => {
    await remote(opts, async (t) => expectOk(await t.request('POST', `${BASE}/verify`, { code }), 'Verifying MFA'));
    process.stdout.write('MFA enabled\n');
  });
  targetOptions(cmd.command('disable').description('turn MFA off (needs a current code once verified)')).option('--code <code>', 'a current code', '').action(async (opts: CommonOpts & { code: string }) => {
    await remote(opts, async (t) => expectOk(await t.request('DELETE', BASE, undefined, { 'mfa-validation-code': opts.code }), 'Disabling MFA'));
    process.stdout.write('MFA disabled\n');
  });
  targetOptions(cmd.command('recovery-codes').description('show the unused recovery codes, or --regenerate them'))
    .requiredOption('--code <code>', 'a current code')
    .option('--regenerate', 'replace all recovery codes')
    .action(async (opts: CommonOpts & { code: string; regenerate?: boolean }) => {
      const format = parseFormat(opts.output);
      const codes = await remote(opts, async (t) => {
        if (opts.regenerate) expectOk(await t.request('POST', `${BASE}/recovery-codes`, { code: opts.code }), 'Regenerating recovery codes');
        // A code is good once: after regenerating, showing needs the next one.
        if (opts.regenerate) return undefined;
        return (expectOk(await t.request('GET', `${BASE}/recovery-codes`, undefined, { 'mfa-validation-code': opts.code }), 'Reading recovery codes')?.data as { recoveryCodes: string[] }).recoveryCodes;
      });
      if (!codes) return void process.stdout.write('recovery codes replaced: show them with `ztc mfa recovery-codes --code NEXT_CODE`\n');
      if (format === 'table') process.stdout.write(codes.join('\n') + '\n');
      else await print(codes, format);
    });
  return cmd;
}
