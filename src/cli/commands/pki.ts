// CA, enrollment and identity-enrollment commands beyond the generic ones, and the client-side
// `ztc enroll`: from an enrollment JWT to an identity file.
import fs from 'node:fs';
import { Command, Option } from 'commander';
import { cliResource, type CliResource } from '../manifest.js';
import { print, parseFormat } from '../output.js';
import { CliError, expectOk, httpsCall, type Transport } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { fileOrValue, jwtFileOf, resolveId, resourceCommand, withTransport } from './resources.js';

const API = '/edge/management/v1';
const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

export async function caCommand(): Promise<Command> {
  const cas = await cliResource('cas');
  const cmd = resourceCommand(cas, { identityRoles: [], isAuthEnabled: false, isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: false });
  targetOptions(cmd.command('verify').description('verify a CA with a certificate it signed whose common name is the CA\'s verificationToken'))
    .argument('<id-or-name>')
    .requiredOption('--cert <file>', 'PEM certificate signed by the CA')
    .action(async (ref: string, opts: CommonOpts & { cert: string }) => {
      const pem = fileOrValue(`@${opts.cert}`);
      await withTransport(opts, async (t) => expectOk(await t.request('POST', `${API}/cas/${encodeURIComponent(await resolveId(t, cas, ref))}/verify`, pem, { 'content-type': 'text/plain' }), `Verifying CA '${ref}'`));
      process.stdout.write(`verified CA ${ref}\n`);
    });
  targetOptions(cmd.command('jwt').description('print (or save with --file) the CA auto-enrollment JWT'))
    .argument('<id-or-name>')
    .option('--file <path>', 'write the JWT to this file')
    .action(async (ref: string, opts: CommonOpts & { file?: string }) => {
      const jwt = await withTransport(opts, async (t) => {
        const r = await t.request('GET', `${API}/cas/${encodeURIComponent(await resolveId(t, cas, ref))}/jwt`, undefined, { accept: 'application/jwt' });
        if (r.status !== 200) expectOk(r, `Reading the JWT of CA '${ref}'`);
        return r.text;
      });
      if (opts.file) fs.writeFileSync(opts.file, jwt + '\n', { mode: 0o600 });
      else process.stdout.write(jwt + '\n');
    });
  return cmd;
}

export async function enrollmentCommand(): Promise<Command> {
  const cmd = resourceCommand(await cliResource('enrollments'), () => ({ expiresAt: inMinutes(180) }));
  targetOptions(cmd.command('refresh').description('a new expiry for an enrollment: the token stays, so its JWT works again'))
    .argument('<id>')
    .option('--expires-at <date-time>', 'new expiry (default: 180 minutes from now)')
    .option('--minutes <n>', 'new expiry in minutes from now')
    .action(async (id: string, opts: CommonOpts & { expiresAt?: string; minutes?: string }) => {
      const format = parseFormat(opts.output);
      const expiresAt = opts.expiresAt ?? inMinutes(Number(opts.minutes ?? 180));
      const r = await withTransport(opts, async (t) => expectOk(await t.request('POST', `${API}/enrollments/${encodeURIComponent(id)}/refresh`, { expiresAt }), `Refreshing enrollment '${id}'`));
      const data = r?.data as { id: string; expiresAt: string; jwt: string };
      if (format === 'table') process.stdout.write(`refreshed enrollment ${data.id}, expires ${data.expiresAt}\n${data.jwt}\n`);
      else await print(data, format);
    });
  return cmd;
}

/** `ztc identity create NAME --enroll ott|updb [-o FILE.jwt]`: the JWT goes to the file (0600) or stdout. */
export async function identityCommand(): Promise<Command> {
  const identities = await cliResource('identities');
  const cmd = identityResourceCommand(identities);
  const action = (name: string, description: string, call: (t: Transport, id: string, opts: Record<string, string>) => Promise<unknown>, done: string) =>
    targetOptions(cmd.command(name).description(description))
      .argument('<id-or-name>')
      .action(async (ref: string, opts: CommonOpts & Record<string, string>) => {
        await withTransport(opts, async (t) => call(t, await resolveId(t, identities, ref), opts));
        process.stdout.write(`${done} ${ref}\n`);
      });
  action('disable', 'disable an identity (its API sessions end at once)', async (t, id, o) => expectOk(await t.request('POST', `${API}/identities/${id}/disable`, { durationMinutes: Number(o.minutes ?? 0) }), 'Disabling'), 'disabled identity')
    .option('--minutes <n>', 'for this many minutes (default 0: until enabled)');
  action('enable', 'enable an identity (clears password lockouts too)', async (t, id) => expectOk(await t.request('POST', `${API}/identities/${id}/enable`), 'Enabling'), 'enabled identity');
  action('mfa-remove', 'remove the MFA enrollment of an identity that lost its codes', async (t, id) => expectOk(await t.request('DELETE', `${API}/identities/${id}/mfa`), 'Removing MFA'), 'removed MFA of identity');
  return cmd;
}

function identityResourceCommand(identities: CliResource): Command {
  return resourceCommand(identities, { type: 'Default', isAdmin: false }, {
    createOptions: (c) => {
      c.addOption(new Option('--enroll <method>', 'the enrollment to start, as upstream\'s CLI does: ott (a certificate), updb (a password; see --username) or none').choices(['ott', 'updb', 'none']).default('ott'));
      c.option('-f, --jwt-output-file <file>', 'write the enrollment JWT to this file (0600), of any name; -o NAME.jwt does the same (-o is otherwise the output format)');
      c.option('--username <name>', 'the username of a updb enrollment (default: the identity name)');
    },
    onCreated: async (t: Transport, id: string, opts: Record<string, unknown>, note: string) => {
      const method = opts.enroll as string;
      const jwtFile = jwtFileOf(opts.output, '--jwt-output-file');
      const format = jwtFile ? 'table' : parseFormat(opts.output as string | undefined);
      const out = (opts.jwtOutputFile as string | undefined) ?? jwtFile;
      if (method === 'none') {
        if (out) throw new CliError(`${opts.jwtOutputFile ? '--jwt-output-file' : `-o ${out}`} writes an enrollment JWT, and --enroll none starts none: drop one of them`);
        return false;
      }
      const identity = expectOk(await t.request('GET', `${API}/identities/${id}`), 'Reading the new identity')?.data as { name: string };
      const username = method === 'updb' ? ((opts.username as string) ?? identity.name) : undefined;
      const body = { identityId: id, method, expiresAt: inMinutes(180), ...(username ? { username } : {}) };
      const made = await t.request('POST', `${API}/enrollments`, body);
      if (made.status >= 300) {
        // No identity without the enrollment it was created for: take it back, and say why.
        await t.request('DELETE', `${API}/identities/${id}`);
        try {
          expectOk(made, 'Creating the enrollment');
        } catch (err) {
          throw new CliError(`${(err as Error).message}\nthe identity '${identity.name}' was not kept${username && username.length < 4 ? `: a updb username has at least 4 characters (--username NAME)` : ''}`);
        }
      }
      const e = made.json;
      const enrollment = expectOk(await t.request('GET', `${API}/enrollments/${(e?.data as { id: string }).id}`), 'Reading the enrollment')?.data as { jwt: string; expiresAt: string };
      const then = username ? `; then log in with: ztc login URL -u ${username}` : '';
      if (out) {
        fs.writeFileSync(out, enrollment.jwt + '\n', { mode: 0o600 });
        if (format === 'json' || format === 'yaml') return print({ ...identity, enrollment: { method, expiresAt: enrollment.expiresAt, jwtFile: out } }, format).then(() => true);
        process.stdout.write(`created identity ${id}${note}\n${method} enrollment${username ? ` for username '${username}'` : ''}: JWT written to ${out} (expires ${enrollment.expiresAt})\nnext: ztc enroll ${out}${then}\n`);
      } else if (format === 'json' || format === 'yaml') {
        await print({ ...identity, enrollment: { method, expiresAt: enrollment.expiresAt, jwt: enrollment.jwt } }, format);
      } else {
        process.stdout.write(`created identity ${id}${note}\n${method} enrollment${username ? ` for username '${username}'` : ''} (expires ${enrollment.expiresAt}); save the JWT below as FILE.jwt and run \`ztc enroll FILE.jwt\`${then}, or use --jwt-output-file FILE.jwt next time:\n${enrollment.jwt}\n`);
      }
      return true;
    },
    jwtFlag: '--jwt-output-file',
  });
}

export function enrollCommand(): Command {
  return new Command('enroll')
    .description('enroll with an enrollment JWT: make a key and CSR (ott), or set a password (updb), and write an identity file')
    .argument('<jwt-file>', 'the enrollment JWT (from `ztc identity create NAME --enroll ott -o FILE.jwt`)')
    .option('--out <file>', 'identity file to write (default: the JWT file name with .json)')
    .option('--password <password>', 'the password to set, for a updb enrollment')
    .action(async (file: string, opts: { out?: string; password?: string }) => {
      const [{ createLocalJWKSet, decodeJwt, jwtVerify }, { newKeyAndCsr }, { certsFromPkcs7 }] = await Promise.all([import('jose'), import('../../model/pki/csr.js'), import('./session.js')]);
      const jwt = fileOrValue(`@${file}`).trim();
      let claims: ReturnType<typeof decodeJwt>;
      try {
        claims = decodeJwt(jwt);
      } catch {
        throw new CliError(`${file} is not an enrollment JWT`);
      }
      const iss = String(claims.iss ?? '');
      if (!/^https:\/\//.test(iss)) throw new CliError('The JWT names no https controller (iss)');
      // Trust on first use, then proof: the controller's CA store, and the JWT's signature under its JWKS.
      const cas = await httpsCall(`${iss}/.well-known/est/cacerts`, { insecure: true });
      if (cas.status !== 200) throw new CliError(`${iss} did not serve its CA store (HTTP ${cas.status})`);
      const caPem = certsFromPkcs7(cas.text).join('');
      const jwks = await httpsCall(`${iss}/edge/client/v1/enroll/jwks`, { caPem });
      try {
        await jwtVerify(jwt, createLocalJWKSet(JSON.parse(jwks.text)));
      } catch (e) {
        throw new CliError(`The JWT is not valid for ${iss}: ${(e as Error).message}`);
      }
      const token = String(claims.jti);
      if (claims.em === 'updb') {
        const password = opts.password ?? process.env.ZTC_PASSWORD ?? (process.stdin.isTTY ? await (await import('../prompt.js')).askNewPassword() : undefined);
        if (!password) throw new CliError('A updb enrollment sets a password: pass --password (or ZTC_PASSWORD), or run in a terminal to be asked');
        expectOk(await httpsCall(`${iss}/edge/client/v1/enroll/updb?token=${encodeURIComponent(token)}`, { method: 'POST', caPem, body: { password } }), 'Enrollment');
        const username = typeof claims.username === 'string' ? claims.username : undefined;
        process.stdout.write(username ? `enrolled: log in as '${username}' with this password (ztc login ${iss} -u ${username})\n` : `enrolled: log in with the username your administrator chose and this password (ztc login ${iss} -u USER)\n`);
        return;
      }
      if (claims.em !== 'ott') throw new CliError(`This command enrolls ott and updb JWTs; this one is ${String(claims.em)}`);
      const { csrPem, keyPem } = newKeyAndCsr(String(claims.sub ?? 'client'));
      const r = expectOk(await httpsCall(`${iss}/edge/client/v1/enroll/ott`, { method: 'POST', caPem, body: { token, clientCsr: csrPem } }), 'Enrollment');
      const certs = r?.data as { cert: string; ca: string };
      const out = opts.out ?? file.replace(/\.jwt$/, '') + '.json';
      const identity = { ztAPI: `${iss}/edge/client/v1`, ztAPIs: [`${iss}/edge/client/v1`], id: { key: `pem:${keyPem}`, cert: `pem:${certs.cert}`, ca: `pem:${certs.ca}` } };
      fs.writeFileSync(out, JSON.stringify(identity, null, 2) + '\n', { mode: 0o600 });
      process.stdout.write(`enrolled: identity file written to ${out} (keep it private)\n`);
    });
}
