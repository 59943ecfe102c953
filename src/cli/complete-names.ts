// `ztc __names NOUN`: the names of a resource's entities, one per line, for shell completion of
// `ztc NOUN get|update|delete <TAB>`. Asks the current profile's controller with a short timeout
// and prints nothing on any failure: a completion must never hang or spill errors into the prompt.
import { manifest } from './manifest.js';
import { loadProfile } from './profile.js';
import { httpsCall } from './transport.js';

const TIMEOUT_MS = 1000;
const MAX = 500;

export async function printNames(noun: string | undefined): Promise<void> {
  try {
    const r = Object.values(await manifest()).find((x) => x.named && x.name.replace(/ /g, '-') === noun);
    const profile = loadProfile();
    if (!r || !profile?.token) return;
    const reply = await httpsCall(`${profile.url}/edge/management/v1/${r.plural}?limit=${MAX}`, {
      caPem: profile.caPem,
      headers: { 'zt-session': profile.token },
      timeoutMs: TIMEOUT_MS,
    });
    const rows = reply.status === 200 ? ((reply.json?.data as { name?: string }[]) ?? []) : [];
    // Names with white space would split into several words in the shell.
    const names = rows.map((x) => x.name).filter((n): n is string => !!n && !/\s/.test(n));
    if (names.length) process.stdout.write(names.join('\n') + '\n');
  } catch {
    // silent by design
  }
}
