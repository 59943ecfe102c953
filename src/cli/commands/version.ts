// ztc version: this program's version, and the controller's when a target is given or logged in.
import { Command } from 'commander';
import { VERSION } from '../../version.js';
import { print, parseFormat } from '../output.js';
import { loadProfile } from '../profile.js';
import { expectOk, openTransport } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';

export function versionCommand(): Command {
  return targetOptions(new Command('version').description('versions of this program and of the controller'))
    .action(async (opts: CommonOpts) => {
      const format = parseFormat(opts.output);
      const info: Record<string, unknown> = { cli: `v${VERSION}`, node: process.version };
      if (opts.dataDir || opts.config || loadProfile(opts.profile)?.token) {
        const t = await openTransport(opts);
        try {
          const reply = await t.request('GET', '/version');
          info.controller = (expectOk(reply, 'Reading the controller version')?.data as { version: string }).version;
          info.target = t.describe;
        } finally {
          await t.close();
        }
      }
      await print(info, format);
    });
}
