// The request log: JSON lines without secrets. Tokens and codes travel in headers (redacted) and in
// query strings (one-time tokens, an API session put in the URL as `?zt-session=`, and filters that
// compare a token field: rewritten before the URL is logged); bodies are never logged.
import type { Writable } from 'node:stream';

/**
 * Query parameters whose value is a secret, by name (decoded, any case, `_` or `-`): the API session
 * (`zt-session`, `session-token`, `session`), one-time and OAuth tokens (`token`, `access_token`,
 * `id_token`, `refresh_token`, `jwt`), passwords, secrets, keys and codes (`code`, `otp`,
 * `mfa-validation-code`, `client_secret`, `api-key`), OAuth's (`code`, `code_verifier`, `refresh_token`,
 * `subject_token`, `id_token_hint`, `client_assertion`), and an `authorization` put in the URL.
 */
const SECRET_PARAM = /token|session|passw|secret|jwt|authoriz|api[-_]?key|verifier|assertion|(?:^|[-_])(?:code|otp|key)$/i;
/** A filter that compares a secret field (a session's or enrollment's token) carries it as a literal. */
const SECRET_FIELD = /token|jti|password|secret/i;

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    // Not decodable: judge the raw text.
    return text;
  }
}

function redactParam(param: string): string {
  const eq = param.indexOf('=');
  if (eq < 0) return param;
  const key = param.slice(0, eq);
  const name = decoded(key);
  if (SECRET_PARAM.test(name)) return `${key}=[redacted]`;
  if (name.toLowerCase() === 'filter' && SECRET_FIELD.test(decoded(param.slice(eq + 1)))) return `${key}=[redacted]`;
  return param;
}

/** The URL as logged: every secret-bearing query value replaced by `[redacted]`, the rest as sent. */
export function redactRequestUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  return `${url.slice(0, q + 1)}${url.slice(q + 1).split('&').map(redactParam).join('&')}`;
}

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
