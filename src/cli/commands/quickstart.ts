// `ztc quickstart`: from nothing to a running controller, a logged-in CLI, a sample identity with its
// enrollment JWT, and the next commands to type.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { saveProfile } from '../profile.js';
import { CliError, expectOk, httpsCall, RemoteTransport } from '../transport.js';
import { configFromOptions, logFormat, runController, serverOptions } from './serve.js';

const SAMPLE = 'quickstart-device';
const PROFILE = 'quickstart';

export function quickstartCommand(): Command {
  return serverOptions(new Command('quickstart').description('start a controller (first run: new data dir, admin, sample identity and its enrollment JWT) and log this CLI in'))
    .option('--no-sample', 'do not create the sample identity')
    .action(async (all: Record<string, string | undefined> & { sample?: boolean }) => {
      const { sample, ...opts } = all;
      const fresh = !fs.existsSync(path.join(opts.dataDir ?? process.env.ZTC_DATA_DIR ?? '.ztc-data', 'pki'));
      const password = opts.adminPassword ?? process.env.ZTC_ADMIN_PASSWORD ?? (fresh ? randomBytes(12).toString('base64url') : undefined);
      // Request logs would bury the instructions: warnings and errors only, unless asked.
      const config = configFromOptions({ ...opts, adminPassword: password, logLevel: opts.logLevel ?? 'warn' });
      const running = await runController(config, logFormat(opts.logFormat));
      const out = process.stdout;
      if (!password) {
        out.write(`\nThis data dir was set up before: log in with  ztc login ${running.url} -u ${config.adminUsername}\n`);
        return;
      }
      // Log this CLI in over the network, exactly as `ztc login` would, trusting the CA we just made.
      const caPem = running.ctx.pki.caBundlePem;
      const url = running.url;
      const login = await httpsCall(`${url}/edge/management/v1/authenticate?method=password`, { method: 'POST', caPem, body: { username: config.adminUsername, password } });
      if (login.status !== 200) throw new CliError(`Could not log in as ${config.adminUsername}: the data dir has another admin password (pass --admin-password)`);
      const token = (expectOk(login, 'Login')?.data as { token: string }).token;
      const profile = { url, username: config.adminUsername, token, caPem };
      saveProfile(PROFILE, profile, true);

      let jwtFile: string | undefined;
      if (sample !== false) {
        const t = new RemoteTransport(profile);
        const existing = expectOk(await t.request('GET', `/edge/management/v1/identities?filter=${encodeURIComponent(`name = "${SAMPLE}"`)}`), 'Looking up the sample identity');
        if (!(existing?.data as unknown[]).length) {
          const made = expectOk(await t.request('POST', '/edge/management/v1/identities', { name: SAMPLE, type: 'Device', isAdmin: false, roleAttributes: ['quickstart'], enrollment: { ott: true } }), 'Creating the sample identity');
          const id = (made?.data as { id: string }).id;
          const detail = expectOk(await t.request('GET', `/edge/management/v1/identities/${id}`), 'Reading the sample identity')?.data as { enrollment: { ott?: { jwt: string } } };
          jwtFile = path.join(config.dataDir, `${SAMPLE}.jwt`);
          fs.writeFileSync(jwtFile, `${detail.enrollment.ott?.jwt}\n`, { mode: 0o600 });
        }
      }
      out.write(`\nReady. The CLI is logged in (profile '${PROFILE}'), so these work from another terminal:\n`);
      out.write(`  ztc identity list\n`);
      if (jwtFile) out.write(`  ztc enroll ${jwtFile}            # enroll the sample device: key, certificate, identity file\n`);
      out.write(`  ztc service create web --role-attributes web\n`);
      out.write(`  ztc service-policy create web-dial --type Dial --identity-roles '#quickstart' --service-roles '#web'\n`);
      out.write(`  open ${url}/docs                  # the API reference (the CA is in ${config.dataDir}/pki)\n`);
      out.write(`Admin: ${config.adminUsername} / ${password}${fresh && !opts.adminPassword ? '   (generated; shown only this once)' : ''}\nStop with Ctrl-C; start again with: ztc serve -d ${config.dataDir}\n`);
    });
}
