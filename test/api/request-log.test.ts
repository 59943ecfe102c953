// The request log never carries a token put in the URL: a client that sends its API session as
// `?zt-session=...` (or any other secret-bearing query parameter) has it replaced in the logged URL,
// as filter values comparing a token field are. Over a real TLS socket, with the log the server writes.
import https from 'node:https';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startController, type Running } from '../../src/server/controller.js';
import { loggerOptions, redactRequestUrl } from '../../src/server/logging.js';
import { tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

let running: Running;
let log = '';
beforeAll(async () => {
  const stream = new PassThrough();
  stream.on('data', (d: Buffer) => (log += d.toString()));
  running = await startController(testConfig(tempDataDir(), { port: 0, bind: '127.0.0.1', db: await testDatabase(), router: false, ctrl: false }), { logger: loggerOptions('info', stream) });
});
afterAll(() => running.close());

function get(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port: running.ctx.config.port, path, ca: running.ctx.pki.caBundlePem, servername: 'localhost', agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

const SECRETS = {
  'zt-session': 'SECRET-zt-session-4f1c',
  'session-token': 'SECRET-session-token-9a2e',
  token: 'SECRET-token-77b0',
  'zt%2Dsession': 'SECRET-encoded-key-1d3f',
  access_token: 'SECRET-access-token-c5e8',
  jwt: 'SECRET-jwt-0b6a',
  ZT_SESSION: 'SECRET-upper-2c9d',
};

describe('the request log', () => {
  it('does not keep a token put in the query string', async () => {
    for (const [key, value] of Object.entries(SECRETS)) {
      await get(`/edge/client/v1/current-identity?limit=5&${key}=${value}&offset=0`);
      await get(`/edge/client/v1/version?${key}=${value}`);
    }
    await expect.poll(() => log.split('\n').filter((l) => l.includes('"url"')).length, { timeout: 3000 }).toBeGreaterThanOrEqual(Object.keys(SECRETS).length * 2);
    for (const value of Object.values(SECRETS)) expect(log).not.toContain(value);
    // What is not secret stays, so the line still says what was asked.
    expect(log).toContain('/edge/client/v1/current-identity?limit=5&zt-session=[redacted]&offset=0');
    expect(log).toContain('/edge/client/v1/version?token=[redacted]');
  });

  it('keeps ordinary parameters as they are', () => {
    expect(redactRequestUrl('/edge/management/v1/identities?limit=10&offset=0&sort=name&method=password')).toBe('/edge/management/v1/identities?limit=10&offset=0&sort=name&method=password');
    expect(redactRequestUrl('/x?filter=name%3D%22a%22')).toBe('/x?filter=name%3D%22a%22');
    expect(redactRequestUrl('/x?filter=token%3D%22abc%22')).toBe('/x?filter=[redacted]');
    expect(redactRequestUrl('/enroll?method=ott&token=abc&code=123')).toBe('/enroll?method=ott&token=[redacted]&code=[redacted]');
  });
});
