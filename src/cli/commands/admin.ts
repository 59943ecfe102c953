// `ztc admin reset-password|create`: recovery on the controller's host, with only the data dir
// (and --db for PostgreSQL): a lost admin password, or no admin left that can log in. Works while
// the server runs (the writes are ordinary transactions on the shared database).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { CliError } from '../errors.js';
import { askNewPassword } from '../prompt.js';
import { expectOk, LocalTransport, type Transport } from '../transport.js';
import type { AdminEvent } from '../../model/events/types.js';
import { withTransport } from './resources.js';

const API = '/edge/management/v1';

interface LocalOpts {
  dataDir: string;
  db?: string;
  config?: string;
  generate?: boolean;
}

const localOptions = (cmd: Command) =>
  cmd
    .requiredOption('-d, --data-dir <dir>', "the controller's data dir (its PKI; and its SQLite database unless --db)")
    .option('--db <url>', 'postgres://... when the controller runs on PostgreSQL (env ZTC_DB)')
    .option('--config <file>', 'controller config file')
    .option('--generate', 'generate the password instead of asking for it (the default when not on a terminal)');

/** Asked twice on a terminal; generated (and printed once) otherwise or with --generate. */
async function newPassword(opts: LocalOpts): Promise<{ password: string; generated: boolean }> {
  if (opts.generate || !process.stdin.isTTY) return { password: randomBytes(12).toString('base64url'), generated: true };
  const password = await askNewPassword();
  if (!password) throw new CliError('No password given: nothing changed (use --generate for a generated one)');
  return { password, generated: false };
}

const target = (opts: LocalOpts) => ({ dataDir: opts.dataDir, config: opts.config, db: opts.db ?? process.env.ZTC_DB });

async function one<T>(t: Transport, path: string, what: string): Promise<T | undefined> {
  return (expectOk(await t.request('GET', `${API}/${path}`), what)?.data as T[])[0];
}

export const AUDIT_LOG = 'audit.log';

/**
 * Recovery bypasses every login, so each use leaves a JSON line (who on the host, when, what; never
 * the password) in the data dir's audit.log (0600), beside the database it changed.
 */
function audit(t: Transport, dataDir: string, event: string, detail: Record<string, string>) {
  let osUser = 'unknown';
  try {
    osUser = os.userInfo().username;
  } catch {
    // no passwd entry (a container): the uid still says who
  }
  const line = JSON.stringify({ time: new Date().toISOString(), event, ...detail, osUser, uid: process.getuid?.(), host: os.hostname() });
  const file = path.join(dataDir, AUDIT_LOG);
  fs.appendFileSync(file, line + '\n', { mode: 0o600 });
  // Also an event in the stored audit (ztc audit --type admin), on the database the controller shares.
  if (t instanceof LocalTransport && t.events) {
    t.events.emit(t.events.stamp<AdminEvent>({ namespace: 'admin', event_type: event.replace(/^admin\./, ''), identity_id: detail.identityId ?? '', identity_name: detail.identity ?? '', username: detail.username ?? '', os_user: osUser, host: os.hostname() }));
  }
  process.stderr.write(`recorded in ${file}\n`);
}

/**
 * Where the controller of this data dir serves: the address it registered when it last started (its
 * port may have come from a flag), else what its config says.
 */
async function controllerUrl(t: Transport, opts: LocalOpts): Promise<string> {
  const listed = await t.request('GET', `${API}/controllers?limit=100`);
  const rows = listed.status === 200 ? ((listed.json?.data as { lastJoinedAt?: string; apiAddresses?: Record<string, { url: string }[]> }[]) ?? []) : [];
  const latest = rows.sort((a, b) => String(b.lastJoinedAt).localeCompare(String(a.lastJoinedAt)))[0];
  const url = latest?.apiAddresses?.['edge-management']?.[0]?.url;
  if (url) return new URL(url).origin;
  try {
    const { advertisedApiUrl, loadConfig } = await import('../../config.js');
    return advertisedApiUrl(loadConfig({ dataDir: opts.dataDir, config: opts.config }));
  } catch {
    return 'URL';
  }
}

function reportPassword(username: string, p: { password: string; generated: boolean }) {
  if (p.generated) process.stdout.write(`password of '${username}': ${p.password}   (generated; shown only this once)\n`);
}

export function adminCommand(): Command {
  const cmd = new Command('admin').description('recover administrator access on the controller host: reset a password, create an admin');
  localOptions(cmd.command('reset-password').description('set a new password for an administrator (default: the default admin), clear its lockouts and remove its MFA'))
    .argument('[username]', 'the password login (updb username) of the admin; default: the default admin')
    .action(async (username: string | undefined, opts: LocalOpts) => {
      await withTransport(target(opts), async (t) => {
        const filter = username ? `method = "updb" and username = "${username.replace(/["\\]/g, '\\$&')}"` : 'isDefaultAdmin = true';
        let auth: { id: string; identityId: string; username: string } | undefined;
        if (username) auth = await one(t, `authenticators?filter=${encodeURIComponent(filter)}&limit=1`, 'Looking up the username');
        else {
          const admin = await one<{ id: string }>(t, `identities?filter=${encodeURIComponent(filter)}&limit=1`, 'Looking up the default admin');
          if (admin) auth = await one(t, `authenticators?filter=${encodeURIComponent(`method = "updb" and identityId = "${admin.id}"`)}&limit=1`, 'Looking up its password login');
        }
        if (!auth) throw new CliError(username ? `No password login is named '${username}' in this data dir` : 'The default admin has no password login: use `ztc admin create NAME -d DIR`');
        const identity = (expectOk(await t.request('GET', `${API}/identities/${auth.identityId}`), 'Reading the identity')?.data as { name: string; isAdmin: boolean });
        if (!identity.isAdmin) throw new CliError(`'${auth.username}' belongs to '${identity.name}', which is not an admin: use \`ztc authenticator update\` for other identities`);
        const p = await newPassword(opts);
        expectOk(await t.request('PATCH', `${API}/authenticators/${auth.id}`, { password: p.password }), 'Setting the password');
        expectOk(await t.request('POST', `${API}/identities/${auth.identityId}/enable`), 'Clearing lockouts');
        expectOk(await t.request('DELETE', `${API}/identities/${auth.identityId}/mfa`), 'Removing MFA');
        audit(t, opts.dataDir, 'admin.password-reset', { username: auth.username, identity: identity.name, identityId: auth.identityId });
        process.stdout.write(`reset the password of '${auth.username}' (identity ${identity.name}); lockouts cleared, MFA removed; the API sessions it had logged in with were ended: log in again (ztc login ${await controllerUrl(t, opts)} -u ${auth.username})\n`);
        reportPassword(auth.username, p);
      });
    });
  localOptions(cmd.command('create').description('create an administrator that logs in with a username and password'))
    .argument('<name>', 'identity name, also its username')
    .action(async (name: string, opts: LocalOpts) => {
      await withTransport(target(opts), async (t) => {
        const p = await newPassword(opts);
        const made = expectOk(await t.request('POST', `${API}/identities`, { name, type: 'Default', isAdmin: true }), `Creating admin '${name}'`)?.data as { id: string };
        const auth = await t.request('POST', `${API}/authenticators`, { identityId: made.id, method: 'updb', username: name, password: p.password });
        if (auth.status >= 300) {
          await t.request('DELETE', `${API}/identities/${made.id}`);
          expectOk(auth, 'Setting the password');
        }
        audit(t, opts.dataDir, 'admin.created', { username: name, identity: name, identityId: made.id });
        process.stdout.write(`created admin '${name}' (identity ${made.id}); log in with: ztc login ${await controllerUrl(t, opts)} -u ${name}\n`);
        reportPassword(name, p);
      });
    });
  return cmd;
}
