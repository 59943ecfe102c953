// Saved logins: ~/.config/ztc/profiles.json (or $ZTC_HOME/profiles.json), mode 0600 since it holds tokens.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Profile {
  url: string;
  username: string;
  token: string;
  /** The controller's CA bundle, pinned at login. */
  caPem: string;
  /** How this profile logs in again, when not with a password (e.g. `ztc login --identity FILE`). */
  relogin?: string;
  /** The identity logged in with MFA: logging in again needs --mfa-code. */
  mfa?: boolean;
  /** An OIDC login (the token is its access token, a JWT): the refresh token that renews it, single use. */
  refreshToken?: string;
  /** When the access token expires (ISO): renewed a minute before. */
  expiresAt?: string;
  /** The certificate a certificate login's tokens are bound to, to present when renewing them. */
  tlsFiles?: { identity?: string; cert?: string; key?: string };
}

interface ProfileFile {
  current?: string;
  profiles: Record<string, Profile>;
}

export const profileDir = () => process.env.ZTC_HOME || path.join(os.homedir(), '.config', 'ztc');
const file = () => path.join(profileDir(), 'profiles.json');

function read(): ProfileFile {
  try {
    return JSON.parse(fs.readFileSync(file(), 'utf8')) as ProfileFile;
  } catch {
    return { profiles: {} };
  }
}

function write(data: ProfileFile) {
  fs.mkdirSync(profileDir(), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file(), JSON.stringify(data, null, 2), { mode: 0o600 });
  fs.chmodSync(file(), 0o600);
}

export function loadProfile(name?: string): Profile | undefined {
  const data = read();
  return data.profiles[name ?? data.current ?? 'default'];
}

/** The name of the profile commands use when --profile is not given. */
export function currentProfileName(): string {
  return read().current ?? 'default';
}

/** The saved profiles and which one commands use when --profile is not given. */
export function listProfiles(): { current?: string; profiles: Record<string, Profile> } {
  const data = read();
  return { current: data.current && data.profiles[data.current] ? data.current : undefined, profiles: data.profiles };
}

/** A profile asked for by name must exist: the message lists those that do. */
export function missingProfile(name: string): string {
  const names = Object.keys(read().profiles);
  return `No profile named '${name}': ${names.length ? `the profiles are ${names.join(', ')} (ztc profile list)` : 'none is saved yet (ztc login URL --profile NAME)'}`;
}

/**
 * Save a login. It becomes the current profile when asked, or when there is no current one; a
 * second profile does not silently take over. Returns the current profile's name afterwards.
 */
export function saveProfile(name: string, profile: Profile, makeCurrent = false): string {
  const data = read();
  data.profiles[name] = profile;
  if (makeCurrent || !data.current || !data.profiles[data.current]) data.current = name;
  write(data);
  return data.current;
}

export function useProfile(name: string): boolean {
  const data = read();
  if (!data.profiles[name]) return false;
  data.current = name;
  write(data);
  return true;
}

export function deleteProfile(name: string): boolean {
  const data = read();
  if (!data.profiles[name]) return false;
  delete data.profiles[name];
  if (data.current === name) delete data.current;
  write(data);
  return true;
}

export function forgetToken(name?: string) {
  const data = read();
  const key = name ?? data.current ?? 'default';
  if (data.profiles[key]) {
    data.profiles[key].token = '';
    write(data);
  }
}
