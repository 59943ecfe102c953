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

export function saveProfile(name: string, profile: Profile) {
  const data = read();
  data.profiles[name] = profile;
  data.current = name;
  write(data);
}

export function forgetToken(name?: string) {
  const data = read();
  const key = name ?? data.current ?? 'default';
  if (data.profiles[key]) {
    data.profiles[key].token = '';
    write(data);
  }
}
