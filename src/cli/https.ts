// One HTTPS call of the CLI, trusting exactly the CA it is given: what the transports, the OIDC login and
// local reads build on (transport.ts adds profiles, sessions and their renewal on top).
import https from 'node:https';
import { CliError } from './errors.js';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  text: string;
  json?: { data?: unknown; meta?: Record<string, unknown>; error?: { code: string; message: string; cause?: unknown } };
}

/** The profile a remote command uses, named when its controller does not answer (transport.ts sets it). */
let profileHint: string | undefined;
export function nameProfile(name: string | undefined) {
  profileHint = name;
}

/** A reply's JSON, or undefined when it is none. */
export const parseReply = (text: string) => {
  try {
    return JSON.parse(text) as Reply['json'];
  } catch {
    return undefined;
  }
};

/**
 * One HTTPS call that trusts exactly `caPem` (or nothing, when fetching the CA to pin it). With
 * `sink`, a 200 body goes there as it arrives instead of into the reply (a large download).
 */
export function httpsCall(
  url: string,
  o: { method?: string; caPem?: string; insecure?: boolean; body?: unknown; headers?: Record<string, string>; cert?: string; key?: string; timeoutMs?: number; sink?: (chunk: string) => void },
): Promise<Reply> {
  const timeout = o.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const payload = o.body === undefined ? undefined : typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
    const req = https.request(
      url,
      {
        method: o.method ?? 'GET',
        ca: o.caPem,
        ...(o.cert && o.key ? { cert: o.cert, key: o.key } : {}),
        rejectUnauthorized: !o.insecure,
        headers: {
          accept: 'application/json',
          ...(payload !== undefined ? { 'content-type': typeof o.body === 'string' ? 'text/plain' : 'application/json' } : {}),
          ...o.headers,
        },
        timeout,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        const sink = res.statusCode === 200 ? o.sink : undefined;
        res.on('data', (c: string) => (sink ? sink(c) : (text += c)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: parseReply(text) }));
        res.on('error', (err) => reject(new CliError(`the answer from ${url} broke off: ${err.message}`)));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${timeout / 1000} s`)));
    req.on('error', (err) => reject(new CliError(unreachable(url, err as NodeJS.ErrnoException))));
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

function unreachable(url: string, err: NodeJS.ErrnoException): string {
  const shown = url.replace(/\?$/, '');
  const origin = (() => {
    try {
      return new URL(url).origin;
    } catch {
      return shown;
    }
  })();
  if (err.code === 'ECONNREFUSED') {
    const which = profileHint ? `the controller of profile '${profileHint}' (${origin})` : `the controller at ${origin}`;
    return `${which} does not answer (connection refused): is it running? (ztc profile list shows which controller each profile uses; ztc profile use NAME or --profile NAME for another)`;
  }
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return `cannot find the host of ${origin} (${err.code}): check the name, or log in with the controller's address (ztc login URL)`;
  return `cannot reach ${shown}: ${err.message}`;
}
