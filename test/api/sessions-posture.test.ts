// Sessions, posture checks and responses, terminators, the service-change indicator, controllers,
// counts and traces, through both APIs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generate } from 'otplib';
import { expireApiSessions } from '../../src/model/auth/api-sessions.js';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
let user: string;
let userToken: string;
let web: string;
let er: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  user = await c.user('sess-user');
  await mg('PATCH', `/identities/${user}`, { roleAttributes: ['staff'] });
  web = (await mg('POST', '/services', { name: 'web', encryptionRequired: true, roleAttributes: ['web'] })).body.data.id;
  er = (await mg('POST', '/edge-routers', { name: 'er-1', roleAttributes: ['public'] })).body.data.id;
  // As if it had enrolled: sessions offer only routers that did (as upstream).
  await c.opened.ctx.store.db.updateTable('routers').set({ isVerified: 1 }).where('id', '=', er).execute();
  await mg('POST', '/edge-router-policies', { name: 'erp', semantic: 'AnyOf', identityRoles: ['#staff'], edgeRouterRoles: ['#public'] });
  await mg('POST', '/service-edge-router-policies', { name: 'serp', semantic: 'AnyOf', serviceRoles: ['#web'], edgeRouterRoles: ['#public'] });
  userToken = await c.login('sess-user', 'password1');
});
afterAll(() => c.close());

function mg(method: string, path: string, body?: unknown) {
  return c.call(method, `${MGMT}${path}`, { token: admin, body });
}
const cl = (method: string, path: string, o: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) => c.call(method, `${CLIENT}${path}`, { token: userToken, ...o });

describe('sessions', () => {
  it('are created only under a granting policy, list the allowed routers, and end with their API session', async () => {
    expectError(await cl('POST', '/sessions', { body: { serviceId: web, type: 'Dial' } }), 404);
    const sp = (await mg('POST', '/service-policies', { name: 'dial-web', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#web'] })).body.data.id;
    expectError(await cl('POST', '/sessions', { body: { serviceId: web, type: 'Bind' } }), 401, 'UNAUTHORIZED');
    expectError(await cl('POST', '/sessions', { body: { serviceId: 'nope' } }), 404);
    expectError(await cl('POST', '/sessions', { body: { serviceId: web, type: 'Sometimes' } }), 400);
    const made = await cl('POST', '/sessions', { body: { serviceId: web, type: 'Dial' } });
    expect(made.status, made.text).toBe(201);
    const s = made.body.data;
    expect(s).toMatchObject({ type: 'Dial', serviceId: web, identityId: user, service: { name: 'web' } });
    expect(s.token.length).toBeGreaterThan(20);
    expect(s.edgeRouters).toEqual([expect.objectContaining({ name: 'er-1', isOnline: false, urls: {} })]);
    // Read back with its token, as upstream's sessionDetail requires (SDKs refresh their routers that way).
    const listed = (await cl('GET', '/sessions')).body.data;
    expect(listed.map((x: { id: string }) => x.id)).toEqual([s.id]);
    expect(listed[0].token).toBe(s.token);
    // The session-token header of the service's router list must name a session of the caller.
    expect((await cl('GET', `/services/${web}/edge-routers`, { headers: { 'session-token': s.token } })).status).toBe(200);
    expectError(await cl('GET', `/services/${web}/edge-routers`, { headers: { 'session-token': 'forged' } }), 401);
    // Others cannot see or delete it; admins can, with the granting policies.
    const other = await c.user('sess-other');
    const otherToken = await c.login('sess-other', 'password1');
    expectError(await c.call('GET', `${CLIENT}/sessions/${s.id}`, { token: otherToken }), 404);
    expectError(await c.call('DELETE', `${CLIENT}/sessions/${s.id}`, { token: otherToken }), 404);
    void other;
    const adminView = (await mg('GET', `/sessions/${s.id}`)).body.data;
    expect(adminView.servicePolicies).toEqual([expect.objectContaining({ id: sp, name: 'dial-web' })]);
    expect((await mg('GET', `/sessions/${s.id}/route-path`)).body.data).toEqual({ routePath: [] });
    // Logout ends the API session and its sessions.
    const second = (await cl('POST', '/sessions', { body: { serviceId: web } })).body.data;
    expect((await cl('DELETE', '/current-api-session')).status).toBe(200);
    expectError(await mg('GET', `/sessions/${s.id}`), 404);
    expectError(await mg('GET', `/sessions/${second.id}`), 404);
    userToken = await c.login('sess-user', 'password1');
    // Deleting its own session.
    const third = (await cl('POST', '/sessions', { body: { serviceId: 'web' } })).body.data;
    expect((await cl('DELETE', `/sessions/${third.id}`)).status).toBe(200);
    expectError(await cl('GET', `/sessions/${third.id}`), 404);
    // An admin deleting the API session ends its sessions too.
    const fourth = (await cl('POST', '/sessions', { body: { serviceId: web } })).body.data;
    expect((await mg('DELETE', `/api-sessions/${fourth.apiSessionId}`)).status).toBe(200);
    expectError(await mg('GET', `/sessions/${fourth.id}`), 404);
    // So does idle expiry.
    userToken = await c.login('sess-user', 'password1');
    const fifth = (await cl('POST', '/sessions', { body: { serviceId: web } })).body.data;
    c.clock.advance((c.config.sessionTimeoutMinutes + 1) * 60_000);
    await expireApiSessions(c.opened.ctx);
    admin = await c.login();
    expectError(await mg('GET', `/sessions/${fifth.id}`), 404);
    userToken = await c.login('sess-user', 'password1');
  });
});

describe('posture', () => {
  it('checks gate session creation; responses pass them; failures are recorded', async () => {
    // As upstream 1.1.10 answers: five types (no MFA row), listed by id, with the operating systems and
    // versions it records, each list sorted as its sets are (types and versions as strings).
    const types = (await mg('GET', '/posture-check-types')).body;
    expect(types.data.map((t: { id: string }) => t.id)).toEqual(['DOMAIN', 'MAC', 'OS', 'PROCESS', 'PROCESS_MULTI']);
    expect(types.meta.pagination.totalCount).toBe(5);
    const byId = Object.fromEntries(types.data.map((t: { id: string }) => [t.id, t]));
    expect(byId.OS).toMatchObject({
      name: 'Operating System Check',
      operatingSystems: [
        { type: 'Android', versions: ['10', '11', '9'] }, { type: 'Linux', versions: ['4.14', '4.19', '5.4', '5.9'] },
        { type: 'Windows', versions: ['10', '2000', '7', '8', 'Vista'] }, { type: 'iOS', versions: ['11', '12'] }, { type: 'macOS', versions: ['10.15', '11.0'] },
      ],
    });
    expect(byId.PROCESS.operatingSystems.map((o: { type: string }) => o.type)).toEqual(['Linux', 'Windows', 'macOS']);
    expect(byId.MAC).toMatchObject({ name: 'MAC Address Check', operatingSystems: [{ type: 'Android' }, { type: 'Linux' }, { type: 'Windows' }, { type: 'macOS' }] });
    expect(byId.PROCESS_MULTI).toMatchObject({ name: 'Process Multi Check', operatingSystems: [{ type: 'Linux', versions: [] }, { type: 'Windows', versions: [] }, { type: 'macOS', versions: [] }] });
    expect((await mg('GET', '/posture-check-types/DOMAIN')).body.data).toMatchObject({ name: 'Windows Domain Check', operatingSystems: [{ type: 'Windows', versions: ['10', '2000', '7', '8', 'Vista'] }] });
    expectError(await mg('GET', '/posture-check-types/MFA'), 404, 'NOT_FOUND');
    expectError(await mg('POST', '/posture-checks', { name: 'no-domains', typeId: 'DOMAIN', domains: [] }), 400);
    // A type upstream's decoder does not know: COULD_NOT_PARSE_BODY, as upstream 1.1.10 answers.
    expect(expectError(await mg('POST', '/posture-checks', { name: 'nope', typeId: 'NOPE' }), 400, 'COULD_NOT_PARSE_BODY').cause).toMatchObject({ field: 'typeId' });
    // A type's missing field: COULD_NOT_VALIDATE naming it, as upstream 1.1.10 answers.
    for (const [body, field] of [
      [{ typeId: 'DOMAIN' }, 'domains'], [{ typeId: 'MAC' }, 'macAddresses'], [{ typeId: 'OS' }, 'operatingSystems'],
      [{ typeId: 'PROCESS' }, 'process'], [{ typeId: 'PROCESS', process: { osType: 'Linux' } }, 'process.path'], [{ typeId: 'PROCESS_MULTI', semantic: 'AllOf' }, 'processes'],
    ] as const) {
      const e = expectError(await mg('POST', '/posture-checks', { name: 'missing', ...body }), 400, 'COULD_NOT_VALIDATE');
      expect(e.cause, field).toMatchObject({ field, reason: `${field} in body is required` });
    }
    // Another type's fields are ignored, as upstream decodes the body as the named type's definition.
    const mixed = await mg('POST', '/posture-checks', { name: 'mixed', typeId: 'DOMAIN', domains: ['x'], macAddresses: ['aa'] });
    expect(mixed.status, mixed.text).toBe(201);
    expect((await mg('GET', `/posture-checks/${mixed.body.data.id}`)).body.data.macAddresses).toBeUndefined();
    expect((await mg('DELETE', `/posture-checks/${mixed.body.data.id}`)).status).toBe(200);
    const domain = (await mg('POST', '/posture-checks', { name: 'corp-domain', typeId: 'DOMAIN', domains: ['CORP.example'], roleAttributes: ['corp'] })).body.data.id;
    const os = (await mg('POST', '/posture-checks', { name: 'modern-os', typeId: 'OS', operatingSystems: [{ type: 'Windows', versions: ['>=10.0.19041'] }], roleAttributes: ['corp'] })).body.data.id;
    expect((await mg('GET', `/posture-checks/${domain}`)).body.data).toMatchObject({ name: 'corp-domain', typeId: 'DOMAIN', domains: ['CORP.example'], version: 1, roleAttributes: ['corp'] });
    expectError(await mg('PATCH', `/posture-checks/${domain}`, { domains: ['corp.example', 'lab.example'] }), 400, 'COULD_NOT_VALIDATE');
    expect((await mg('PATCH', `/posture-checks/${domain}`, { typeId: 'DOMAIN', domains: ['corp.example', 'lab.example'] })).status).toBe(200);
    expect((await mg('GET', `/posture-checks/${domain}`)).body.data.version).toBe(2);
    expectError(await mg('PATCH', `/posture-checks/${domain}`, { typeId: 'MAC' }), 400);

    const svc = (await mg('POST', '/services', { name: 'payroll', encryptionRequired: true, roleAttributes: ['finance'] })).body.data.id;
    const sp = (await mg('POST', '/service-policies', { name: 'payroll-dial', type: 'Dial', semantic: 'AllOf', identityRoles: ['#staff'], serviceRoles: [`@${svc}`], postureCheckRoles: ['#corp'] })).body.data.id;
    expect((await mg('GET', `/service-policies/${sp}/posture-checks`)).body.data.map((x: { name: string }) => x.name).sort()).toEqual(['corp-domain', 'modern-os']);
    const before = (await cl('GET', '/current-api-session/service-updates')).body.data.lastChangeAt;

    let service = (await cl('GET', `/services/${svc}`)).body.data;
    const pq = service.postureQueries.find((q: { policyId: string }) => q.policyId === sp);
    expect(pq).toMatchObject({ policyType: 'Dial', isPassing: false });
    expect(pq.postureQueries.map((q: { id: string; queryType: string; isPassing: boolean }) => [q.queryType, q.isPassing]).sort()).toEqual([['DOMAIN', false], ['OS', false]]);
    expectError(await cl('POST', '/sessions', { body: { serviceId: svc } }), 401, 'INVALID_POSTURE');
    const failed = (await mg('GET', `/identities/${user}/failed-service-requests`)).body.data;
    expect(failed[0]).toMatchObject({ serviceId: svc, serviceName: 'payroll', sessionType: 'Dial' });
    expect(failed[0].policyFailures[0].checks.map((x: { postureCheckName: string }) => x.postureCheckName).sort()).toEqual(['corp-domain', 'modern-os']);

    expectError(await cl('POST', '/posture-response', { body: { id: domain, typeId: 'DOMAIN' } }), 400, 'INVALID_FIELD');
    expectError(await cl('POST', '/posture-response', { body: { id: 'nope', typeId: 'DOMAIN', domain: 'x' } }), 400, 'INVALID_FIELD');
    expectError(await cl('POST', '/posture-response', { body: { id: domain, typeId: 'MAC', macAddresses: ['aa'] } }), 400, 'INVALID_FIELD');
    // A bulk batch with one bad entry keeps none of them.
    expectError(await cl('POST', '/posture-response-bulk', { body: [{ id: domain, typeId: 'DOMAIN', domain: 'corp.example' }, { id: os, typeId: 'OS' }] }), 400);
    expect((await cl('GET', `/services/${svc}`)).body.data.postureQueries[0].postureQueries.every((q: { isPassing: boolean }) => !q.isPassing)).toBe(true);

    const single = await cl('POST', '/posture-response', { body: { id: domain, typeId: 'DOMAIN', domain: 'CORP.EXAMPLE' } });
    expect(single.status, single.text).toBe(201);
    expect(single.body.data).toEqual({ services: [] });
    expectError(await cl('POST', '/sessions', { body: { serviceId: svc } }), 401, 'INVALID_POSTURE');
    expect((await cl('POST', '/posture-response-bulk', { body: [{ id: os, typeId: 'OS', type: 'Windows', version: '10.0.18363' }] })).status).toBe(200);
    expectError(await cl('POST', '/sessions', { body: { serviceId: svc } }), 401, 'INVALID_POSTURE');
    expect((await cl('POST', '/posture-response-bulk', { body: [{ id: os, typeId: 'OS', type: 'windows', version: '10.0.22621', build: '1' }] })).status).toBe(200);
    service = (await cl('GET', `/services/${svc}`)).body.data;
    expect(service.postureQueries[0].isPassing).toBe(true);
    expect((await cl('POST', '/sessions', { body: { serviceId: svc } })).status).toBe(201);
    // The change marker moved with the posture results.
    const after = (await cl('GET', '/current-api-session/service-updates')).body.data.lastChangeAt;
    expect(Date.parse(after)).toBeGreaterThanOrEqual(Date.parse(before));

    const data = (await mg('GET', `/identities/${user}/posture-data`)).body.data;
    expect(data.domain).toMatchObject({ postureCheckId: domain, domain: 'CORP.EXAMPLE' });
    expect(data.os).toMatchObject({ postureCheckId: os, type: 'windows', version: '10.0.22621', build: '1' });
    expect(Object.keys(data.apiSessionPostureData)).toHaveLength(1);
    // A new API session starts without posture: the checks fail again there.
    const fresh = await c.login('sess-user', 'password1');
    expectError(await c.call('POST', `${CLIENT}/sessions`, { token: fresh, body: { serviceId: svc } }), 401, 'INVALID_POSTURE');
  });

  it('an MFA check passes once the API session has done MFA, until its timeout or a wake', async () => {
    const mfaUser = await c.user('mfa-posture');
    await mg('PATCH', `/identities/${mfaUser}`, { roleAttributes: ['mfa-people'] });
    const check = (await mg('POST', '/posture-checks', { name: 'mfa-10m', typeId: 'MFA', timeoutSeconds: 600, promptOnWake: true, roleAttributes: ['mfa'] })).body.data.id;
    expect((await mg('GET', `/posture-checks/${check}`)).body.data).toMatchObject({ timeoutSeconds: 600, promptOnWake: true });
    const svc = (await mg('POST', '/services', { name: 'vault', encryptionRequired: true })).body.data.id;
    await mg('POST', '/service-policies', { name: 'vault-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#mfa-people'], serviceRoles: ['@vault'], postureCheckRoles: ['#mfa'] });
    let token = await c.login('mfa-posture', 'password1');
    expectError(await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: svc } }), 401, 'INVALID_POSTURE');
    const secret = (await c.call('POST', `${CLIENT}/current-identity/mfa`, { token })).body;
    const started = (await c.call('GET', `${CLIENT}/current-identity/mfa`, { token })).body.data;
    void secret;
    const key = new URL(started.provisioningUrl).searchParams.get('secret')!;
    expect((await c.call('POST', `${CLIENT}/current-identity/mfa/verify`, { token, body: { code: await generate({ secret: key, epoch: c.clock.now().getTime() / 1000 }) } })).status).toBe(200);
    const made = await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: svc } });
    expect(made.status, made.text).toBe(201);
    const q = (await c.call('GET', `${CLIENT}/services/${svc}`, { token })).body.data.postureQueries[0].postureQueries[0];
    expect(q).toMatchObject({ queryType: 'MFA', isPassing: true, timeout: 600 });
    expect(q.timeoutRemaining).toBeGreaterThan(590);
    // 2.x's fields: what the check asks again after, and when it runs out.
    expect(q).toMatchObject({ promptOnWake: true, promptOnUnlock: false });
    expect(Date.parse(q.timeoutAt)).toBe(c.clock.now().getTime() + q.timeoutRemaining * 1000);
    // A wake asks for MFA again; the answer names the service whose timer ran out.
    c.clock.advance(1000);
    const woke = await c.call('POST', `${CLIENT}/posture-response`, { token, body: { id: 'state', typeId: 'ENDPOINT_STATE', woken: true } });
    expect(woke.body.data.services).toEqual([expect.objectContaining({ id: svc, name: 'vault', postureQueryType: 'MFA', timeoutRemaining: 0 })]);
    expectError(await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: svc } }), 401, 'INVALID_POSTURE');
    c.clock.advance(31_000);
    expect((await c.call('POST', `${CLIENT}/authenticate/mfa`, { token, body: { code: await generate({ secret: key, epoch: c.clock.now().getTime() / 1000 }) } })).status).toBe(200);
    expect((await c.call('POST', `${CLIENT}/sessions`, { token, body: { serviceId: svc } })).status).toBe(201);
    // Past the timeout the check fails again.
    c.clock.advance(601_000);
    token = (await c.call('GET', `${CLIENT}/current-api-session`, { token })).status === 200 ? token : await c.login('mfa-posture', 'password1');
    const late = (await c.call('GET', `${CLIENT}/services/${svc}`, { token })).body.data.postureQueries[0].postureQueries[0];
    expect(late).toMatchObject({ isPassing: false, timeoutRemaining: 0 });
  });
});

describe('terminators', () => {
  it('are managed by admins and listed for clients that may use the service', async () => {
    expectError(await mg('POST', '/terminators', { service: web, router: er, binding: 'transport', address: 'tcp:10.0.0.1:80', cost: 70000 }), 400);
    expectError(await mg('POST', '/terminators', { service: 'nope', router: er, binding: 'transport', address: 'tcp:x:1' }), 400, 'INVALID_FIELD');
    const t = await mg('POST', '/terminators', { service: 'web', router: 'er-1', binding: 'transport', address: 'tcp:10.0.0.1:80', cost: 10, precedence: 'required', identity: 'host-1', identitySecret: 'c2VjcmV0' });
    expect(t.status, t.text).toBe(201);
    const d = (await mg('GET', `/terminators/${t.body.data.id}`)).body.data;
    expect(d).toMatchObject({ serviceId: web, routerId: er, service: { name: 'web' }, router: { name: 'er-1' }, binding: 'transport', address: 'tcp:10.0.0.1:80', cost: 10, dynamicCost: 10, precedence: 'required', identity: 'host-1' });
    expect(d.identitySecret).toBeUndefined();
    expect((await mg('PATCH', `/terminators/${t.body.data.id}`, { precedence: 'failed' })).status).toBe(200);
    expect((await mg('GET', `/services/${web}/terminators`)).body.data).toHaveLength(1);
    expect((await cl('GET', `/services/${web}/terminators`)).body.data[0]).toMatchObject({ precedence: 'failed' });
    const stranger = await c.user('term-stranger');
    void stranger;
    expectError(await c.call('GET', `${CLIENT}/services/${web}/terminators`, { token: await c.login('term-stranger', 'password1') }), 404);
    expect((await mg('DELETE', `/terminators/${t.body.data.id}`)).status).toBe(200);
  });
});

describe('the service-change indicator', () => {
  it('moves when a policy, a service or a config changes', async () => {
    const at = async () => (await cl('GET', '/current-api-session/service-updates')).body.data.lastChangeAt as string;
    let last = await at();
    for (const change of [
      () => mg('PATCH', `/services/${web}`, { maxIdleTimeMillis: 1000 }),
      () => mg('POST', '/service-policies', { name: 'bind-web', type: 'Bind', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#web'] }),
      () => mg('POST', '/configs', { name: 'cfg-marker', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'x', port: 1 } }),
      () => mg('PATCH', `/identities/${user}`, { roleAttributes: ['staff', 'more'] }),
    ]) {
      c.clock.advance(1000);
      expect((await change()).status).toBeLessThan(300);
      const now = await at();
      expect(Date.parse(now)).toBeGreaterThan(Date.parse(last));
      last = now;
    }
  });
});

describe('controllers, protocols, counts and traces', () => {
  it('answer', async () => {
    expect((await cl('GET', '/protocols', { token: undefined })).body.data.https.address).toMatch(/^https:\/\/localhost:/);
    // Upstream's keys: one per store it keeps, its edge sub-stores as routers.edge and services.edge.
    const counts = (await mg('GET', '/summary')).body.data;
    expect(Object.keys(counts)).toEqual([
      'apiSessionCertificates', 'apiSessions', 'authPolicies', 'authenticators', 'cas', 'configTypes', 'configs', 'controllers', 'edgeRouterPolicies',
      'enrollments', 'eventualEvents', 'externalJwtSigners', 'identities', 'identityTypes', 'mfas', 'postureCheckTypes', 'postureChecks', 'revocations',
      'routers', 'routers.edge', 'serviceEdgeRouterPolicies', 'servicePolicies', 'services', 'services.edge', 'sessions', 'terminators',
    ]);
    expect(counts).toMatchObject({ 'routers.edge': 1, routers: 1, identityTypes: 2, postureCheckTypes: 5, revocations: 0, eventualEvents: 0 });
    expect(counts['services.edge']).toBe(counts.services);
    // One controller alone is not HA: 0, as upstream outside HA.
    expect(counts.controllers).toBe(0);
    expect(counts.identities).toBeGreaterThanOrEqual(4);
    expectError(await cl('GET', '/summary'.replace('', '')), 404);
    const trace = await mg('PUT', `/identities/${user}/trace`, { enabled: true, duration: '5m', traceId: 't-1', channels: ['dial'] });
    expect(trace.status, trace.text).toBe(200);
    expect(Date.parse(trace.body.data.until) - c.clock.now().getTime()).toBe(300_000);
    expectError(await mg('PUT', `/identities/${user}/trace`, { enabled: true, duration: 'soon' }), 400, 'INVALID_FIELD');
    expect((await mg('PUT', `/identities/${user}/trace`, { enabled: false })).body.data.enabled).toBe(false);
    expect((await cl('GET', '/controllers')).status).toBe(200);
  });
});
