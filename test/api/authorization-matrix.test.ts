// No route is open by mistake: every registered route (taken from the route table, so new routes are
// covered without editing this test) is called as six kinds of caller, and each answer must be what
// the route's access allows, with the error envelope. Public routes are exactly those listed in
// src/server/public-routes.ts.
import { generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_ROUTES } from '../../src/server/public-routes.js';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
const callers: Record<string, string | undefined> = {};

beforeAll(async () => {
  c = await startTestController({ config: { authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 } });
  admin = await c.login();
  await c.user('matrix-user');
  callers.nonAdmin = await c.login('matrix-user', 'password1');
  callers.none = undefined;
  callers.unknown = 'not-a-real-token';

  await c.user('matrix-expired');
  callers.expired = await c.login('matrix-expired', 'password1');
  await c.opened.ctx.store.db.updateTable('apiSessions').set({ lastActivityAt: '2000-01-01T00:00:00.000Z' }).where('identityId', '=', (await c.opened.ctx.store.db.selectFrom('identities').select('id').where('name', '=', 'matrix-expired').executeTakeFirstOrThrow()).id).execute();

  const disabled = await c.user('matrix-disabled');
  callers.disabled = await c.login('matrix-disabled', 'password1');
  expect((await c.call('POST', `${MGMT}/identities/${disabled}/disable`, { token: admin, body: { durationMinutes: 0 } })).status).toBe(200);

  // A user with verified MFA: its next login is partial until it gives a code.
  await c.user('matrix-mfa');
  const full = await c.login('matrix-mfa', 'password1');
  await c.call('POST', `${CLIENT}/current-identity/mfa`, { token: full });
  const url = (await c.call('GET', `${CLIENT}/current-identity/mfa`, { token: full })).body.data.provisioningUrl as string;
  const secret = new URL(url).searchParams.get('secret')!;
  expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token: full, body: { code: await generate({ secret, epoch: c.clock.now().getTime() / 1000 }) } })).status).toBe(200);
  const partial = await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'matrix-mfa', password: 'password1' } });
  expect(partial.body.data.isMfaRequired).toBe(true);
  callers.partial = partial.body.data.token;
});
afterAll(() => c.close());

const AUTH_MESSAGES = [/session is not authorized or the credentials are invalid/, /has expired/, /is disabled/, /needs an administrator/];
/** Refused by the authorization layer itself (not by the operation, e.g. a wrong MFA code). */
const refusedByAuth = (r: { status: number; body: any }) =>
  r.status === 401 && (r.body?.error?.code === 'MFA_REQUIRED' || AUTH_MESSAGES.some((m) => m.test(r.body?.error?.message ?? '')));

/** What each kind of caller may reach, by the route's declared access. */
const allowed: Record<string, (access: string) => boolean> = {
  none: (a) => a === 'public',
  unknown: (a) => a === 'public',
  expired: (a) => a === 'public',
  disabled: (a) => a === 'public',
  partial: (a) => a === 'public' || a === 'partial',
  nonAdmin: (a) => a !== 'admin',
};

describe('authorization matrix', () => {
  it('public routes are exactly the listed ones', () => {
    const declared = c.app.routeTable.routes.filter((r) => r.access === 'public').map((r) => `${r.method} ${r.url.replace(/(.)\/$/, '$1')}`);
    expect(new Set(declared)).toEqual(new Set(PUBLIC_ROUTES));
  });

  it('management routes are for admins, but for the groups the specification opens to any caller', () => {
    // Informational, well-known, authentication, MFA, current API session and current identity; and the network JWT, public in upstream (permissions.Always).
    const open = /^\/edge\/management\/v1(\/|$)(version|\.well-known\/|enumerated-(router-)?capabilities|specs|network-jwts|authenticate|current-api-session|current-identity|$)/;
    const wrong = c.app.routeTable.routes.filter((r) => r.url.startsWith(MGMT) && !open.test(r.url) && r.access !== 'admin').map((r) => `${r.method} ${r.url} (${r.access})`);
    expect(wrong).toEqual([]);
  });

  it('answers every route as its access allows, for every kind of caller', async () => {
    // Logging out last, so the callers' tokens stay valid through the run.
    const routes = [...c.app.routeTable.routes].sort((a, b) => Number(a.url.endsWith('/current-api-session') && a.method === 'DELETE') - Number(b.url.endsWith('/current-api-session') && b.method === 'DELETE'));
    expect(routes.length).toBeGreaterThan(240);
    const counts = { refused: 0, allowed: 0 };
    for (const [who, first] of Object.entries(callers)) {
      let token = first;
      for (const r of routes) {
        const url = r.url.replace(/:\w+/g, 'matrix-id');
        const body = ['POST', 'PUT', 'PATCH'].includes(r.method) ? {} : undefined;
        const res = await c.call(r.method, url, { token, body });
        const label = `${who} ${r.method} ${r.url} (${r.access}) -> ${res.status} ${res.text.slice(0, 200)}`;
        expect(res.status, label).toBeLessThan(500);
        // The OIDC provider's OAuth endpoints answer RFC 6749's {error, error_description}, as OAuth clients read it.
        const oauth = r.url.startsWith('/oidc/') && typeof res.body?.error === 'string';
        if (res.status >= 400 && res.headers['content-type']?.toString().includes('json') && !oauth) {
          expect(res.body?.error?.code, label).toEqual(expect.any(String));
          expect(res.body?.meta?.apiVersion, label).toBeTruthy();
        }
        if (allowed[who](r.access)) {
          expect(refusedByAuth(res), label).toBe(false);
          counts.allowed++;
          // That was a logout: log in again for the other API's logout.
          if (r.method === 'DELETE' && r.url.endsWith('/current-api-session')) {
            token = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: who === 'partial' ? 'matrix-mfa' : 'matrix-user', password: 'password1' } })).body.data.token;
          }
        } else {
          expect(res.status, label).toBe(401);
          expect(res.body.error.code, label).toMatch(/^(UNAUTHORIZED|MFA_REQUIRED)$/);
          counts.refused++;
        }
      }
    }
    // Most of the matrix is refusals: management routes for everyone but admins.
    expect(counts.refused).toBeGreaterThan(counts.allowed);
  }, 120_000);
});
