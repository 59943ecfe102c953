// ztc login / logout.
import { createHash } from 'node:crypto';
import readline from 'node:readline';
import { Command } from 'commander';
import forge from 'node-forge';
import { forgetToken, loadProfile, missingProfile, saveProfile } from '../profile.js';
import { CliError, expectOk, httpsCall, openTransport } from '../transport.js';

/** The certificates of a base64 PKCS#7 bundle, as PEM. */
export function certsFromPkcs7(b64: string): string[] {
  const der = forge.util.decode64(b64.replace(/\s+/g, ''));
  const p7 = forge.pkcs7.messageFromAsn1(forge.asn1.fromDer(der)) as unknown as { certificates: forge.pki.Certificate[] };
  return p7.certificates.map((c) => forge.pki.certificateToPem(c).replace(/\r\n/g, '\n'));
}

const sha256 = (pem: string) =>
  createHash('sha256').update(Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(forge.pki.certificateFromPem(pem))).getBytes(), 'binary')).digest('hex').match(/../g)!.join(':');

async function ask(question: string): Promise<string> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await new Promise((resolve) => rl.question(question, resolve));
  } finally {
    rl.close();
  }
}

export function loginCommand(): Command {
  return new Command('login')
    .description('log in to a controller and save the session as a profile (the controller CA is pinned)')
    .argument('<url>', 'controller address, e.g. https://ctrl.example.com:1280')
    .option('-u, --username <name>', 'username', 'admin')
    .option('-p, --password <password>', 'password (env ZTC_PASSWORD; asked for when absent)')
    .option('-y, --yes', 'trust the controller CA without asking')
    .option('--profile <name>', 'profile name to save under', 'default')
    .option('--use', 'make this the current profile (a new name does not take over otherwise, unless none is current)')
    .action(async (url: string, opts: { username: string; password?: string; yes?: boolean; profile: string; use?: boolean }) => {
      const base = url.replace(/\/+$/, '').replace(/\/edge\/(client|management)\/v1$/, '');
      if (!/^https:\/\//.test(base)) throw new CliError(`The controller URL must start with https:// (got ${url})`);
      // Trust on first use: fetch the CA store without verification, show its fingerprint, then pin it.
      const cas = await httpsCall(`${base}/.well-known/est/cacerts`, { insecure: true, headers: { accept: 'application/pkcs7-mime' } });
      if (cas.status !== 200) throw new CliError(`${base} did not serve its CA store (HTTP ${cas.status}): is this a ztc or OpenZiti controller?`);
      const pems = certsFromPkcs7(cas.text);
      if (!pems.length) throw new CliError(`${base} served an empty CA store`);
      const root = pems[pems.length - 1];
      const subject = forge.pki.certificateFromPem(root).subject.getField('CN')?.value ?? '(no name)';
      if (!opts.yes) {
        if (!process.stdin.isTTY) throw new CliError(`Controller CA '${subject}' (SHA-256 ${sha256(root)}) is not trusted yet: check the fingerprint and pass --yes`);
        const answer = await ask(`Controller CA '${subject}'\n  SHA-256 ${sha256(root)}\nTrust it for ${base}? [y/N] `);
        if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('Not trusted: nothing saved');
      }
      const caPem = pems.join('');
      const password = opts.password ?? process.env.ZTC_PASSWORD ?? (process.stdin.isTTY ? await ask('Password: ') : undefined);
      if (!password) throw new CliError('No password: pass -p, set ZTC_PASSWORD, or run in a terminal to be asked');
      const reply = await httpsCall(`${base}/edge/management/v1/authenticate?method=password`, { method: 'POST', caPem, body: { username: opts.username, password } });
      const body = expectOk(reply, 'Login');
      const token = (body?.data as { token: string }).token;
      const current = saveProfile(opts.profile, { url: base, username: opts.username, token, caPem }, opts.use);
      process.stdout.write(`logged in to ${base} as ${opts.username} (profile ${opts.profile})\n`);
      process.stdout.write(current === opts.profile ? `current profile: ${current}\n` : `current profile is still '${current}': ztc profile use ${opts.profile}, or --profile ${opts.profile} on a command\n`);
    });
}

export function logoutCommand(): Command {
  return new Command('logout')
    .description('end the saved session and forget its token')
    .option('--profile <name>', 'profile to log out of')
    .action(async (opts: { profile?: string }) => {
      const profile = loadProfile(opts.profile);
      if (!profile && opts.profile) throw new CliError(missingProfile(opts.profile));
      if (!profile?.token) throw new CliError('Not logged in');
      const t = await openTransport({ profile: opts.profile });
      const reply = await t.request('DELETE', '/edge/management/v1/current-api-session');
      forgetToken(opts.profile);
      // A session that already expired is logged out all the same.
      if (reply.status !== 200 && reply.status !== 401) expectOk(reply, 'Logout');
      process.stdout.write(`logged out of ${profile.url}\n`);
    });
}

