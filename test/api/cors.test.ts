// Browsers on other origins, when the operator lists them (--cors-origins): preflights for every route
// are answered without a session, listed origins get the headers a web app needs to send zt-session and
// JSON and to read the answer (errors included), and every other origin gets no CORS header at all.
// (Upstream controllers answer CORS for any origin when their web binding enables it; ztc makes it opt-in
// per origin.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

const A = 'https://a.example';
const B = 'https://b.example:8443';
let c: TestController;
let off: TestController;
let admin: string;

beforeAll(async () => {
  c = await startTestController({ config: { corsOrigins: [A, B] } });
  off = await startTestController();
  admin = await c.login();
});
afterAll(async () => {
  await c?.close();
  await off?.close();
});

const preflight = (t: TestController, url: string, origin: string, method = 'GET') =>
  t.call('OPTIONS', url, { headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'zt-session,content-type' } });

describe('CORS for listed origins', () => {
  it('answers the preflight of every route, without a session, with the headers a web client needs', async () => {
    const routes = c.app.routeTable.routes;
    expect(routes.length).toBeGreaterThan(200);
    for (const r of routes) {
      const url = r.url.replace(/:\w+/g, 'some-id').replace(/\*$/, 'x');
      const res = await preflight(c, url, A, r.method);
      const label = `${r.method} ${url}`;
      expect(res.status, label).toBe(204);
      expect(res.headers['access-control-allow-origin'], label).toBe(A);
      expect(String(res.headers['access-control-allow-methods']), label).toContain(r.method);
    }
    const res = await preflight(c, `${MGMT}/identities`, B, 'POST');
    expect(res.headers['access-control-allow-origin']).toBe(B);
    expect(String(res.headers['access-control-allow-headers']).split(/,\s*/)).toEqual(expect.arrayContaining(['zt-session', 'content-type', 'authorization']));
    expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0);
    expect(String(res.headers.vary)).toMatch(/Origin/);
    expect(res.text).toBe('');
  });

  it('lets a listed origin read answers and errors, and the request id and session header', async () => {
    const listed = await c.call('GET', `${MGMT}/identities`, { token: admin, headers: { origin: A } });
    expect(listed.status).toBe(200);
    expect(listed.headers['access-control-allow-origin']).toBe(A);
    expect(String(listed.headers['access-control-expose-headers']).split(/,\s*/)).toEqual(expect.arrayContaining(['zt-session', 'x-request-id']));
    expect(String(listed.headers.vary)).toMatch(/Origin/);
    const login = await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'admin', password: 'wrong-password' }, headers: { origin: B } });
    expectError(login, 401);
    expect(login.headers['access-control-allow-origin']).toBe(B);
    const missing = await c.call('GET', `${MGMT}/nothing-here`, { token: admin, headers: { origin: A } });
    expectError(missing, 404);
    expect(missing.headers['access-control-allow-origin']).toBe(A);
  });

  it('gives any other origin no CORS header, on preflights and on requests', async () => {
    for (const origin of ['https://evil.example', 'https://a.example:444', 'http://a.example', 'https://sub.a.example', 'null']) {
      const pre = await preflight(c, `${MGMT}/identities`, origin);
      expect(pre.status, origin).not.toBe(204);
      expect(pre.headers['access-control-allow-origin'], origin).toBeUndefined();
      expect(pre.headers['access-control-allow-methods'], origin).toBeUndefined();
      const get = await c.call('GET', `${MGMT}/identities`, { token: admin, headers: { origin } });
      expect(get.status, origin).toBe(200);
      expect(get.headers['access-control-allow-origin'], origin).toBeUndefined();
      expect(String(get.headers.vary), origin).toMatch(/Origin/);
    }
    // An OPTIONS that is not a preflight is not answered as one.
    expect((await c.call('OPTIONS', `${MGMT}/identities`, { headers: { origin: A } })).status).not.toBe(204);
  });

  it('is off by default: no CORS header for any origin', async () => {
    const pre = await preflight(off, `${MGMT}/identities`, A);
    expect(pre.status).not.toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    const get = await off.call('GET', `${CLIENT}/version`, { headers: { origin: A } });
    expect(get.status).toBe(200);
    expect(get.headers['access-control-allow-origin']).toBeUndefined();
    expect(get.headers.vary).toBeUndefined();
  });

  it('takes origins from the flag, ZTC_CORS_ORIGINS or the config file, and refuses what is not an origin', () => {
    expect(loadConfig({}, { ZTC_CORS_ORIGINS: 'https://A.example/, https://b.example:8443' }).corsOrigins).toEqual(['https://a.example', 'https://b.example:8443']);
    expect(loadConfig({ corsOrigins: 'http://localhost:4200' }, {}).corsOrigins).toEqual(['http://localhost:4200']);
    expect(loadConfig({}, {}).corsOrigins).toEqual([]);
    for (const bad of ['*', 'https://a.example/console', 'a.example', 'ftp://a.example', 'https://u:p@a.example', 'https://a.example?x=1']) {
      expect(() => loadConfig({ corsOrigins: bad }, {}), bad).toThrow(ConfigError);
    }
  });
});
