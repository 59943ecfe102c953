// The request log: JSON lines without secrets. Tokens and codes travel in headers (redacted) and in
// query strings (one-time tokens, rewritten before the URL is logged); bodies are never logged.
import type { Writable } from 'node:stream';

const SECRET_QUERY = /([?&](?:token|password|code)=)[^&]*/gi;
export const redactRequestUrl = (url: string) => url.replace(SECRET_QUERY, '$1[redacted]');

export function loggerOptions(level: string, stream?: Writable) {
  return {
    level,
    ...(stream ? { stream } : {}),
    redact: { paths: ['req.headers["zt-session"]', 'req.headers.authorization', 'req.headers["mfa-validation-code"]', 'req.headers["session-token"]'], censor: '[redacted]' },
    serializers: {
      req: (req: { method: string; url: string; ip?: string }) => ({ method: req.method, url: redactRequestUrl(req.url), remoteAddress: req.ip }),
    },
  };
}
