// The request log: JSON lines without secrets. Tokens and codes travel in headers (redacted) and in
// query strings (one-time tokens, and filters that compare a token field: rewritten before the URL is
// logged); bodies are never logged.
import type { Writable } from 'node:stream';

const SECRET_QUERY = /([?&](?:token|password|code)=)[^&]*/gi;
/** A filter that compares a secret field (a session's or enrollment's token) carries it as a literal. */
const FILTER_QUERY = /([?&]filter=)([^&]*)/gi;
const SECRET_FIELD = /token|jti|password|secret/i;

function redactFilter(_: string, key: string, value: string): string {
  let text = value;
  try {
    text = decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    // Not decodable: judge the raw text.
  }
  return SECRET_FIELD.test(text) ? `${key}[redacted]` : `${key}${value}`;
}

export const redactRequestUrl = (url: string) => url.replace(SECRET_QUERY, '$1[redacted]').replace(FILTER_QUERY, redactFilter);

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
