// Posture checks in report-only mode (ziti#2095, issue 47 item 5): a check marked reportOnly records
// its failures (a posture event in the audit and the stream, ztc_posture_check_failures_total, the
// identity's failed service requests) and denies nothing: the session is made, the service list shows the
// query passing (with its real result beside it), the policy advisor allows, 2.x routers are not told to
// enforce it. Through HTTP; the data plane's side (a live circuit kept) is in test/fabric/access-loss.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRouterDataModel } from '../../src/model/router-data-model.js';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
let user: string;
let userToken: string;
let web: string;
let check: string;
let policy: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
  user = await c.user('ro-user');
  await mg('PATCH', `/identities/${user}`, { roleAttributes: ['staff'] });
  web = (await mg('POST', '/services', { name: 'ro-web', encryptionRequired: true, roleAttributes: ['web'] })).body.data.id;
  const er = (await mg('POST', '/edge-routers', { name: 'ro-er', roleAttributes: ['public'] })).body.data.id;
  await c.opened.ctx.store.db.updateTable('routers').set({ isVerified: 1 }).where('id', '=', er).execute();
  await mg('POST', '/edge-router-policies', { name: 'ro-erp', semantic: 'AnyOf', identityRoles: ['#staff'], edgeRouterRoles: ['#public'] });
  await mg('POST', '/service-edge-router-policies', { name: 'ro-serp', semantic: 'AnyOf', serviceRoles: ['#web'], edgeRouterRoles: ['#public'] });
  userToken = await c.login('ro-user', 'password1');
});
afterAll(() => c.close());

function mg(method: string, path: string, body?: unknown) {
  return c.call(method, `${MGMT}${path}`, { token: admin, body });
}
const cl = (method: string, path: string, body?: unknown) => c.call(method, `${CLIENT}${path}`, { token: userToken, body });
const dial = () => cl('POST', '/sessions', { serviceId: web, type: 'Dial' });
const failedRequests = async () => (await mg('GET', `/identities/${user}/failed-service-requests`)).body.data as Record<string, any>[];
const postureEvents = async () => {
  await c.opened.ctx.events.flush();
  return (await mg('GET', `/audit-events?types=posture&entity=${user}`)).body.data as Record<string, any>[];
};
async function metric(mode: string) {
  const text = (await c.call('GET', '/metrics', { token: admin })).text;
  const line = text.split('\n').find((l) => l.startsWith('ztc_posture_check_failures_total{') && l.includes('check="ro-domain"') && l.includes(`mode="${mode}"`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('a report-only posture check', () => {
  it('is a field of posture checks: created, read, filtered, patched, replaced', async () => {
    const made = await mg('POST', '/posture-checks', { name: 'ro-domain', typeId: 'DOMAIN', domains: ['corp.example'], reportOnly: true });
    expect(made.status, made.text).toBe(201);
    check = made.body.data.id;
    expect((await mg('GET', `/posture-checks/${check}`)).body.data).toMatchObject({ name: 'ro-domain', reportOnly: true, domains: ['corp.example'] });
    const other = (await mg('POST', '/posture-checks', { name: 'ro-enforced', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] })).body.data.id;
    expect((await mg('GET', `/posture-checks/${other}`)).body.data.reportOnly).toBe(false);
    const listed = (await mg('GET', `/posture-checks?filter=${encodeURIComponent('reportOnly = true')}`)).body.data as { id: string }[];
    expect(listed.map((x) => x.id)).toEqual([check]);
    // A patch without it keeps it; one with it changes it; a replacement without it clears it (PUT replaces).
    expect((await mg('PATCH', `/posture-checks/${check}`, { typeId: 'DOMAIN', domains: ['corp.example', 'lab.example'] })).status).toBe(200);
    expect((await mg('GET', `/posture-checks/${check}`)).body.data.reportOnly).toBe(true);
    expect((await mg('PUT', `/posture-checks/${other}`, { name: 'ro-enforced', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'], reportOnly: true })).status).toBe(200);
    expect((await mg('GET', `/posture-checks/${other}`)).body.data.reportOnly).toBe(true);
    expect((await mg('PUT', `/posture-checks/${other}`, { name: 'ro-enforced', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] })).status).toBe(200);
    expect((await mg('GET', `/posture-checks/${other}`)).body.data.reportOnly).toBe(false);
    expectError(await mg('PATCH', `/posture-checks/${other}`, { typeId: 'MAC', reportOnly: 'sometimes' }), 400);
    expect((await mg('DELETE', `/posture-checks/${other}`)).status).toBe(200);
  });

  it('fails without denying: the session is made, the failure recorded (failed service request, event, metric)', async () => {
    policy = (await mg('POST', '/service-policies', { name: 'ro-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#staff'], serviceRoles: ['#web'], postureCheckRoles: [`@${check}`] })).body.data.id;
    // The service list: the query passes (it denies nothing), its real result beside it.
    const svc = (await cl('GET', `/services/${web}`)).body.data;
    expect(svc.postureQueries).toEqual([
      expect.objectContaining({ policyId: policy, isPassing: true, postureQueries: [expect.objectContaining({ id: check, queryType: 'DOMAIN', isPassing: true, reportOnly: true, wouldPass: false })] }),
    ]);
    const before = await metric('report-only');
    const made = await dial();
    expect(made.status, made.text).toBe(201);
    const [failed] = await failedRequests();
    expect(failed).toMatchObject({ serviceId: web, serviceName: 'ro-web', sessionType: 'Dial', reportOnly: true, policyFailures: [{ policyId: policy, policyName: 'ro-dial', checks: [expect.objectContaining({ postureCheckId: check, postureCheckName: 'ro-domain', postureCheckType: 'DOMAIN', reportOnly: true, actualValue: '' })] }] });
    // (The test's clock stands still: events of one instant come in no particular order.)
    const event = (await postureEvents()).find((e) => e.session_id === made.body.data.id)!;
    expect(event).toMatchObject({
      namespace: 'posture', event_type: 'reported', identity_id: user, service_id: web, service_name: 'ro-web', session_type: 'Dial', session_id: made.body.data.id,
      policies: [{ id: policy, name: 'ro-dial' }], checks: [{ id: check, name: 'ro-domain', type: 'DOMAIN', report_only: true }],
    });
    // No device value in the event (the failed service request, an admin's read, holds those).
    expect(JSON.stringify(event)).not.toContain('actualValue');
    expect(await metric('report-only')).toBe(before + 1);
  });

  it('records nothing once the check passes, nor when another policy grants without failing checks', async () => {
    expect((await cl('POST', '/posture-response', { id: check, typeId: 'DOMAIN', domain: 'corp.example' })).status).toBe(201);
    const svc = (await cl('GET', `/services/${web}`)).body.data;
    expect(svc.postureQueries[0].postureQueries[0]).toMatchObject({ isPassing: true, reportOnly: true, wouldPass: true });
    const n = (await failedRequests()).length;
    const events = (await postureEvents()).length;
    expect((await dial()).status).toBe(201);
    expect(await failedRequests()).toHaveLength(n);
    expect(await postureEvents()).toHaveLength(events);
  });

  it('is not a denial to the policy advisor, nor to 2.x routers (their data model leaves it out of the policy)', async () => {
    expect((await cl('POST', '/posture-response', { id: check, typeId: 'DOMAIN', domain: 'home.example' })).status).toBe(201);
    const advice = (await mg('GET', `/policy-advisor?identity=${user}&service=${web}`)).body.data;
    // (Its router never enrolled: that is the advisor's only objection.)
    expect(advice[0].dial).toMatchObject({ policies: [{ id: policy, name: 'ro-dial' }] });
    expect(advice[0].dial.reasons.map((r: { code: string }) => r.code)).toEqual(['ROUTER_NOT_READY']);
    const rdm = await readRouterDataModel(c.opened.ctx);
    expect(rdm.servicePolicies.find((p) => p.id === policy)!.postureChecks).toEqual([]);
    expect(rdm.postureChecks.map((x) => x.id)).toContain(check);
  });

  it('enforced again, it denies: the refusal is recorded as denied, counted as enforced', async () => {
    // A second later, so the refusal is the newest failed request (the test's clock stands still).
    c.clock.advance(1000);
    expect((await mg('PATCH', `/posture-checks/${check}`, { typeId: 'DOMAIN', reportOnly: false })).status).toBe(200);
    const svc = (await cl('GET', `/services/${web}`)).body.data;
    expect(svc.postureQueries[0].postureQueries[0]).toMatchObject({ isPassing: false });
    expect(svc.postureQueries[0].postureQueries[0].reportOnly).toBeUndefined();
    const before = await metric('enforced');
    expectError(await dial(), 401, 'INVALID_POSTURE');
    const [failed] = await failedRequests();
    expect(failed.reportOnly).toBeUndefined();
    expect(failed.policyFailures[0].checks[0]).toMatchObject({ postureCheckName: 'ro-domain', actualValue: 'home.example' });
    const event = (await postureEvents()).find((e) => e.event_type === 'denied')!;
    expect(event).toMatchObject({ event_type: 'denied', checks: [{ name: 'ro-domain', report_only: false }] });
    expect(event.session_id).toBeUndefined();
    expect(await metric('enforced')).toBe(before + 1);
    const rdm = await readRouterDataModel(c.opened.ctx);
    expect(rdm.servicePolicies.find((p) => p.id === policy)!.postureChecks).toEqual([check]);
  });
});
