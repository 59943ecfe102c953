// ztc login / logout.
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { Command } from 'commander';
import forge from 'node-forge';
import { sha256Fingerprint } from '../../model/pki/fingerprint.js';
import { ask, askSecret } from '../prompt.js';
import { forgetToken, listProfiles, loadProfile, missingProfile, saveProfile, type Profile } from '../profile.js';
import { authHeader, CliError, expectOk, httpsCall, openTransport } from '../transport.js';
import { claims, isJwt, offersOidc, oidcLogin } from '../oidc-login.js';
import { baseUrl, readIdentityFile } from '../identity-file.js';

/** The certificates of a base64 PKCS#7 bundle, as PEM. */
export function certsFromPkcs7(b64: string): string[] {
  const der = forge.util.decode64(b64.replace(/\s+/g, ''));
  const p7 = forge.pkcs7.messageFromAsn1(forge.asn1.fromDer(der)) as unknown as { certificates: forge.pki.Certificate[] };
  return p7.certificates.map((c) => forge.pki.certificateToPem(c).replace(/\r\n/g, '\n'));
}


interface LoginOpts {
  username: string;
  password?: string;
  mfaCode?: string;
  cert?: string;
  key?: string;
  identity?: string;
  extJwt?: string;
  yes?: boolean;
  profile: string;
  use?: boolean;
  tokenFile?: string;
  token?: string;
  legacy?: boolean;
}

/** The certificates of a PEM bundle (a profile's pinned CA store). */
const pemsOf = (bundle: string) => bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];

const signedBy = (cert: X509Certificate, issuer: X509Certificate) => {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false; // a key this build cannot verify with vouches for nothing
  }
};

/** The certificates of `pems` that lead to `root`: the root, and each signed by one already kept. */
export function vouchedFor(root: string, pems: string[]): string[] {
  const kept = [new X509Certificate(root)];
  const rest = pems.filter((p) => p !== root).map((pem) => ({ pem, cert: new X509Certificate(pem) }));
  const out = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const c of rest) {
      if (out.has(c.pem) || !kept.some((k) => signedBy(c.cert, k))) continue;
      out.add(c.pem);
      kept.push(c.cert);
      grew = true;
    }
  }
  return pems.filter((p) => out.has(p));
}

/**
 * The CA a saved profile already trusts for this controller: the profile being logged in to first,
 * then any other profile of the same address (after a logout, an idle timeout, a second profile).
 */
function pinnedCa(base: string, profile: string): string | undefined {
  const { profiles } = listProfiles();
  const of = (p: Profile | undefined) => (p?.caPem && baseUrl(p.url) === base ? p.caPem : undefined);
  return of(profiles[profile]) ?? Object.values(profiles).map(of).find(Boolean);
}

/**
 * The controller's CA store, to pin in the profile. A controller whose TLS the CA already pinned for
 * it verifies is trusted without asking again (asking at every login teaches users to answer yes
 * without looking); its store is then read over that verified connection. Otherwise the store is
 * fetched unverified and its root's fingerprint shown, to be confirmed (--yes, or y on a terminal),
 * and a root that differs from the pinned one is said to be a change, not a first meeting.
 */
async function pinControllerCa(base: string, yes: boolean | undefined, pinned: string | undefined): Promise<string> {
  const accept = { accept: 'application/pkcs7-mime' };
  if (pinned) {
    const verified = await httpsCall(`${base}/.well-known/est/cacerts`, { caPem: pinned, headers: accept }).catch(() => undefined);
    const pems = verified?.status === 200 ? certsFromPkcs7(verified.text) : [];
    if (pems.length) return pems.join('');
  }
  const cas = await httpsCall(`${base}/.well-known/est/cacerts`, { insecure: true, headers: accept });
  if (cas.status !== 200) throw new CliError(`${base} did not serve its CA store (HTTP ${cas.status}): is this a ztc or OpenZiti controller?`);
  const served = certsFromPkcs7(cas.text);
  if (!served.length) throw new CliError(`${base} served an empty CA store`);
  const root = served[served.length - 1];
  // The same root as pinned, over a connection it did not verify (a name the server certificate does
  // not carry, say): the pin stands, and the login's own verified call says what is wrong.
  if (pinned && pemsOf(pinned).some((p) => sha256Fingerprint(p) === sha256Fingerprint(root))) return pinned;
  // What the confirmed fingerprint vouches for: the root and what it signed, not whatever else an
  // unverified answer put beside it.
  const pems = vouchedFor(root, served);
  const subject = forge.pki.certificateFromPem(root).subject.getField('CN')?.value ?? '(no name)';
  const shown = `'${subject}' (SHA-256 ${sha256Fingerprint(root)})`;
  const changed = pinned
    ? `The controller at ${base} no longer proves itself with the CA saved for it: it now presents CA ${shown}. ` +
      'If its PKI was created anew on purpose (a new data directory), compare that fingerprint with the one its banner prints (root CA) and trust it; ' +
      'if not, do not: something may be answering in its place'
    : undefined;
  if (yes) {
    if (changed) process.stderr.write(`warning: ${changed}. Trusted as --yes asks.\n`);
  } else if (!process.stdin.isTTY) {
    throw new CliError(changed ? `${changed}: pass --yes to trust it.` : `Controller CA ${shown} is not trusted yet: check the fingerprint and pass --yes`);
  } else {
    const answer = await ask(changed ? `${changed}.\nTrust the new CA for ${base}? [y/N] ` : `Controller CA '${subject}'\n  SHA-256 ${sha256Fingerprint(root)}\nTrust it for ${base}? [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('Not trusted: nothing saved');
  }
  return pems.join('');
}

/** The second factor, when the session asks for one: a TOTP code or a recovery code. */
async function completeMfa(base: string, caPem: string, token: string, code: string | undefined, tls: { cert?: string; key?: string }) {
  if (!code) {
    if (!process.stdin.isTTY) throw new CliError('This identity needs MFA: pass --mfa-code CODE (a code from the authenticator app, or a recovery code)');
    code = (await ask('MFA code (or a recovery code): ')).trim();
  }
  const r = await httpsCall(`${base}/edge/management/v1/authenticate/mfa`, { method: 'POST', caPem, ...tls, body: { code }, headers: { 'zt-session': token } });
  if (r.status !== 200) {
    const e = r.json?.error;
    throw new CliError(`MFA failed: ${e?.message ?? `HTTP ${r.status}`}${e ? ` [${e.code}]` : ''}: check the device's clock, or use one of the recovery codes`);
  }
}

export function loginCommand(): Command {
  return new Command('login')
    .description('log in to a controller and save the session as a profile (the controller CA is pinned)')
    .argument('[url]', 'controller address, e.g. https://ctrl.example.com:1280 (not needed with --identity)')
    .option('-u, --username <name>', 'username', 'admin')
    .option('-p, --password <password>', 'password (env ZTC_PASSWORD; asked for when absent)')
    .option('--mfa-code <code>', 'TOTP code or recovery code, when the identity has MFA (asked for on a terminal)')
    .option('--cert <file>', 'log in with this client certificate (PEM; with --key)')
    .option('--key <file>', 'the private key of --cert (PEM)')
    .option('--identity <file>', 'log in with an identity file written by `ztc enroll`')
    .option('--ext-jwt <token>', 'log in with a JWT from an external identity provider (a configured external JWT signer)')
    .option('--token-file <file>', 'use an API token (ztc token create) read from the first line of this file: no session to renew, it works until it expires or is revoked')
    .option('--token <token>', 'use a session token you already hold: an OIDC access token (a JWT, sent as Authorization: Bearer) or a legacy zt-session token')
    .option('--legacy', 'log in the legacy way (POST /authenticate, a zt-session token) even when the controller offers OIDC')
    .option('-y, --yes', 'trust the controller CA without asking')
    .option('--profile <name>', 'profile name to save under', 'default')
    .option('--use', 'make this the current profile (a new name does not take over otherwise, unless none is current)')
    .action(async (url: string | undefined, opts: LoginOpts) => {
      const ways = [opts.identity && '--identity', (opts.cert || opts.key) && '--cert/--key', opts.extJwt && '--ext-jwt', opts.password && '--password', opts.tokenFile && '--token-file', opts.token && '--token'].filter(Boolean);
      if (ways.length > 1) throw new CliError(`Choose one way to log in: ${ways.join(' or ')}`);
      if (!!opts.cert !== !!opts.key) throw new CliError('--cert and --key go together: the certificate and its private key');
      const fromFile = opts.identity ? readIdentityFile(opts.identity) : undefined;
      if (!url && !fromFile) throw new CliError('Which controller? ztc login https://HOST:PORT (or --identity FILE, which names it)');
      const base = url ? baseUrl(url) : fromFile!.base;
      if (!/^https:\/\//.test(base)) throw new CliError(`The controller URL must start with https:// (got ${url})`);
      const caPem = fromFile && !url ? fromFile.caPem : await pinControllerCa(base, opts.yes, pinnedCa(base, opts.profile));
      const tls = fromFile ? { cert: fromFile.cert, key: fromFile.key } : opts.cert ? { cert: fs.readFileSync(opts.cert, 'utf8'), key: fs.readFileSync(opts.key!, 'utf8') } : {};
      if (opts.tokenFile) return void (await saveTokenLogin(base, caPem, opts));
      if (opts.token) return void (await saveSessionToken(base, caPem, opts));
      // As upstream's CLI since 2.0: the controller's OIDC provider when /version offers it, else legacy.
      if (!opts.legacy && (await offersOidc(base, caPem))) return void (await loginOidc(base, caPem, tls, opts));
      const authUrl = `${base}/edge/management/v1/authenticate`;
      let reply;
      let relogin: string | undefined;
      if (tls.cert) {
        reply = await httpsCall(`${authUrl}?method=cert`, { method: 'POST', caPem, ...tls, body: {} });
        relogin = opts.identity ? `ztc login --identity ${opts.identity}` : `ztc login ${base} --cert ${opts.cert} --key ${opts.key}`;
      } else if (opts.extJwt) {
        reply = await httpsCall(`${authUrl}?method=ext-jwt`, { method: 'POST', caPem, body: {}, headers: { authorization: `Bearer ${opts.extJwt}` } });
        relogin = `ztc login ${base} --ext-jwt TOKEN`;
      } else {
        const password = opts.password ?? process.env.ZTC_PASSWORD ?? (process.stdin.isTTY ? await askSecret('Password: ') : undefined);
        if (!password) throw new CliError('No password: pass -p, set ZTC_PASSWORD, or run in a terminal to be asked');
        reply = await httpsCall(`${authUrl}?method=password`, { method: 'POST', caPem, body: { username: opts.username, password } });
        if (reply.status === 401 && reply.json?.error?.code === 'INVALID_AUTH') {
          throw new CliError(
            `Login failed: the controller refused username '${opts.username}' with that password [INVALID_AUTH, HTTP 401]: check both (-u NAME). ` +
              `A lost admin password is reset on the controller's host: ztc admin reset-password -d DATA_DIR (see docs/operations.md, "Lost admin password").`,
          );
        }
      }
      const session = expectOk(reply, 'Login')?.data as { token: string; identity?: { name?: string }; authQueries?: { typeId?: string }[] };
      const mfa = !!session.authQueries?.some((q) => q.typeId === 'MFA');
      if (mfa) await completeMfa(base, caPem, session.token, opts.mfaCode, tls);
      const who = tls.cert || opts.extJwt ? (session.identity?.name ?? 'identity') : opts.username;
      // The session this profile held before ends: a re-login leaves no session behind it.
      const previous = loadProfile(opts.profile);
      if (previous?.token && previous.token !== session.token && baseUrl(previous.url) === base) {
        await httpsCall(`${base}/edge/management/v1/current-api-session`, { method: 'DELETE', caPem: previous.caPem, headers: { 'zt-session': previous.token }, timeoutMs: 5_000 }).catch(() => undefined);
      }
      const current = saveProfile(opts.profile, { url: base, username: who, token: session.token, caPem, ...(relogin ? { relogin } : {}), ...(mfa ? { mfa } : {}) }, opts.use);
      process.stdout.write(`logged in to ${base} as ${who} (profile ${opts.profile})\n`);
      process.stdout.write(current === opts.profile ? `current profile: ${current}\n` : `current profile is still '${current}': ztc profile use ${opts.profile}, or --profile ${opts.profile} on a command\n`);
    });
}

/** The command that logs this profile in again (saved with it, for the hint after a 401). */
function reloginOf(base: string, opts: LoginOpts): string | undefined {
  if (opts.identity) return `ztc login --identity ${opts.identity}`;
  if (opts.cert) return `ztc login ${base} --cert ${opts.cert} --key ${opts.key}`;
  if (opts.extJwt) return `ztc login ${base} --ext-jwt TOKEN`;
  return undefined;
}

/** End the session a profile held before a new login (a re-login leaves no session behind it). */
async function endPrevious(base: string, profile: string, token: string) {
  const previous = loadProfile(profile);
  if (previous?.token && previous.token !== token && baseUrl(previous.url) === base) {
    await httpsCall(`${base}/edge/management/v1/current-api-session`, { method: 'DELETE', caPem: previous.caPem, headers: authHeader(previous.token), timeoutMs: 5_000 }).catch(() => undefined);
  }
}

function saved(base: string, who: string, opts: LoginOpts, current: string) {
  process.stdout.write(`logged in to ${base} as ${who} (profile ${opts.profile})\n`);
  process.stdout.write(current === opts.profile ? `current profile: ${current}\n` : `current profile is still '${current}': ztc profile use ${opts.profile}, or --profile ${opts.profile} on a command\n`);
}

/** The OIDC login (oidc-login.ts): password, certificate or external JWT; the profile keeps the access and refresh tokens. */
async function loginOidc(base: string, caPem: string, tls: { cert?: string; key?: string }, opts: LoginOpts) {
  const method = tls.cert ? 'cert' : opts.extJwt ? 'ext-jwt' : 'password';
  let password: string | undefined;
  if (method === 'password') {
    password = opts.password ?? process.env.ZTC_PASSWORD ?? (process.stdin.isTTY ? await askSecret('Password: ') : undefined);
    if (!password) throw new CliError('No password: pass -p, set ZTC_PASSWORD, or run in a terminal to be asked');
  }
  const t = await oidcLogin(base, caPem, { method, username: opts.username, password, tls, extJwt: opts.extJwt, mfaCode: opts.mfaCode });
  const who = method === 'password' ? opts.username : (t.identityName ?? 'identity');
  await endPrevious(base, opts.profile, t.accessToken);
  const mfa = Array.isArray(claims(t.accessToken).amr) && (claims(t.accessToken).amr as string[]).includes('totp');
  const tlsFiles = opts.identity ? { identity: opts.identity } : opts.cert ? { cert: opts.cert, key: opts.key } : undefined;
  const relogin = reloginOf(base, opts);
  const current = saveProfile(
    opts.profile,
    { url: base, username: who, token: t.accessToken, caPem, refreshToken: t.refreshToken, expiresAt: t.expiresAt, ...(tlsFiles ? { tlsFiles } : {}), ...(relogin ? { relogin } : {}), ...(mfa ? { mfa } : {}) },
    opts.use,
  );
  saved(base, who, opts, current);
}

/** A session token given on the command line (an OIDC access token, or a legacy one): checked, then saved. */
async function saveSessionToken(base: string, caPem: string, opts: LoginOpts) {
  const token = opts.token!.trim();
  const checked = await httpsCall(`${base}/edge/management/v1/current-identity`, { caPem, headers: authHeader(token) });
  if (checked.status === 401) throw new CliError(`The controller refused the token: ${checked.json?.error?.message ?? 'HTTP 401'}`);
  const me = expectOk(checked, 'Checking the token')?.data as { name: string };
  const exp = isJwt(token) ? Number(claims(token).exp) : NaN;
  const current = saveProfile(opts.profile, { url: base, username: me.name, token, caPem, ...(Number.isFinite(exp) ? { expiresAt: new Date(exp * 1000).toISOString() } : {}) }, opts.use);
  saved(base, me.name, opts, current);
}


/** An API token instead of a login: checked against the controller, then saved as the profile's token. */
async function saveTokenLogin(base: string, caPem: string, opts: LoginOpts) {
  let token: string;
  try {
    token = fs.readFileSync(opts.tokenFile!, 'utf8').split(/\r?\n/)[0].trim();
  } catch (e) {
    throw new CliError(`cannot read the token file ${opts.tokenFile}: ${(e as Error).message}`);
  }
  if (!token) throw new CliError(`the token file ${opts.tokenFile} is empty`);
  const checked = await httpsCall(`${base}/edge/management/v1/current-identity`, { caPem, headers: { authorization: `Bearer ${token}` } });
  // Refused: no session to log in to again; the token itself must be replaced.
  if (checked.status === 401) throw new CliError(`The controller refused the API token in ${opts.tokenFile}: ${checked.json?.error?.message ?? 'HTTP 401'}. Put a new one there (an admin runs ztc token create NAME) and log in again.`);
  const me = expectOk(checked, 'Checking the API token')?.data as { name: string };
  const current = saveProfile(opts.profile, { url: base, username: me.name, token, caPem, relogin: `ztc login ${base} --token-file ${opts.tokenFile}` }, opts.use);
  process.stdout.write(`using an API token for ${me.name} at ${base} (profile ${opts.profile})\n`);
  process.stdout.write(current === opts.profile ? `current profile: ${current}\n` : `current profile is still '${current}': ztc profile use ${opts.profile}, or --profile ${opts.profile} on a command\n`);
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

