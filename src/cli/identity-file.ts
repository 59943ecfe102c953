// Identity files (`ztc enroll`, OpenZiti SDKs' JSON): the controller, key, certificate and CA they hold.
import fs from 'node:fs';
import { CliError } from './errors.js';

/** An identity file written by `ztc enroll` (or an OpenZiti SDK): its controller, key, certificate and CA. */
export function readIdentityFile(file: string): { base: string; cert: string; key: string; caPem: string } {
  let parsed: { ztAPI?: string; id?: { key?: string; cert?: string; ca?: string } };
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new CliError(`${file} is not an identity file (${(e as Error).message}): make one with \`ztc enroll FILE.jwt\``);
  }
  const pem = (v: string | undefined, what: string) => {
    if (!v?.startsWith('pem:')) throw new CliError(`${file} has no ${what} in PEM form (id.${what} should start with "pem:")`);
    return v.slice(4);
  };
  if (!parsed.ztAPI) throw new CliError(`${file} names no controller (ztAPI)`);
  return { base: baseUrl(parsed.ztAPI), key: pem(parsed.id?.key, 'key'), cert: pem(parsed.id?.cert, 'cert'), caPem: pem(parsed.id?.ca, 'ca') };
}

export const baseUrl = (url: string) => url.replace(/\/+$/, '').replace(/\/edge\/(client|management)\/v1$/, '');

