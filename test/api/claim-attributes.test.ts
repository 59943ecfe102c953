// Role attributes from certificate claims (ztc's, ziti#827; issue 47 item 3): a CA's roleAttributeClaims
// turn claims of the certificates it issued (SAN URIs such as SPIFFE ids, subject fields such as OU) into
// role attributes of the identities that log in with them, kept in step at each login; an admin's
// attributes stay. Through HTTP over TLS with certificates from a test CA, and a service policy by attribute.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { TestCa } from '../helpers/certs.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
const ca = new TestCa('Workload CA');
let caId = '';
let serviceId = '';

const mgmt = async (method: string, path: string, body?: unknown) => {
  let r = await c.call(method, `${MGMT}${path}`, { token: admin, body });
  if (r.status === 401) {
    admin = await c.login();
    r = await c.call(method, `${MGMT}${path}`, { token: admin, body });
  }
  return r;
};
const certLogin = (cert: { certPem: string; keyPem: string }) => c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert: cert.certPem, key: cert.keyPem, body: {} });
const attributesOf = async (id: string) => ((await mgmt('GET', `/identities/${id}`)).body.data.roleAttributes as string[]).slice().sort();
const serviceNames = async (token: string) => ((await c.call('GET', `${CLIENT}/services?limit=-1`, { token })).body.data as { name: string }[]).map((s) => s.name);

const RULES = [
  { source: 'SAN_URI', pattern: '^spiffe://corp\\.example/team/([a-z-]+)/', attribute: 'team-$1' },
  { source: 'SUBJECT', field: 'OU', pattern: '^(.+)$', attribute: 'ou-$1' },
  { source: 'SAN_URI', pattern: '^spiffe://corp\\.example/' },
];

beforeAll(async () => {
  c = await startTlsController({ authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 });
  admin = await c.login();
  const made = await mgmt('POST', '/cas', {
    name: ca.name, certPem: ca.pem, identityRoles: ['workloads'], identityNameFormat: '[caName]-[commonName]', isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true,
    roleAttributeClaims: RULES,
  });
  expect(made.status, made.text).toBe(201);
  caId = made.body.data.id;
  const token = (await mgmt('GET', `/cas/${caId}`)).body.data.verificationToken;
  expect((await c.call('POST', `${MGMT}/cas/${caId}/verify`, { token: admin, body: ca.issue(token).certPem, contentType: 'text/plain' })).status).toBe(200);
  serviceId = (await mgmt('POST', '/services', { name: 'payments-api', encryptionRequired: true })).body.data.id;
  expect((await mgmt('POST', '/service-policies', { name: 'payments-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#team-payments'], serviceRoles: [`@${serviceId}`] })).status).toBe(201);
});
afterAll(() => c.close());

describe('a CA whose claims give role attributes', () => {
  it('stores, shows and validates its rules; upstream clients\' PUT keeps them', async () => {
    const d = (await mgmt('GET', `/cas/${caId}`)).body.data;
    expect(d.roleAttributeClaims).toEqual(RULES);
    const bad = expectError(await mgmt('PATCH', `/cas/${caId}`, { roleAttributeClaims: [{ source: 'SAN_URI', pattern: '([' }] }), 400, 'INVALID_FIELD');
    expect(bad.cause.field).toBe('roleAttributeClaims[0].pattern');
    expect(expectError(await mgmt('PATCH', `/cas/${caId}`, { roleAttributeClaims: [{ source: 'SUBJECT', pattern: '.+' }] }), 400, 'INVALID_FIELD').cause.field).toBe('roleAttributeClaims[0].field');
    expectError(await mgmt('PATCH', `/cas/${caId}`, { roleAttributeClaims: [{ source: 'ISSUER', pattern: '.+' }] }), 400, 'COULD_NOT_VALIDATE');
    expect((await mgmt('PUT', `/cas/${caId}`, { name: d.name, identityRoles: d.identityRoles, identityNameFormat: d.identityNameFormat, isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true })).status).toBe(200);
    expect((await mgmt('GET', `/cas/${caId}`)).body.data.roleAttributeClaims).toEqual(RULES);
  });

  it('a login gives the attributes its certificate claims; a policy by attribute grants the service; a second certificate changes them, the admin\'s stay', async () => {
    const first = ca.issue('worker-1', { uris: ['spiffe://corp.example/team/payments/worker-1'], ou: 'blue' });
    const enrolled = await c.call('POST', `${CLIENT}/enroll/ca`, { cert: first.certPem, key: first.keyPem });
    expect(enrolled.status, enrolled.text).toBe(200);
    const id = (await mgmt('GET', `/identities?filter=${encodeURIComponent('name = "Workload CA-worker-1"')}`)).body.data[0].id as string;
    // An attribute an admin sets, and one the CA gives at enrollment, are the admin's: the rules never remove them.
    expect((await mgmt('PATCH', `/identities/${id}`, { roleAttributes: ['workloads', 'on-call'] })).status).toBe(200);

    const one = await certLogin(first);
    expect(one.status, one.text).toBe(200);
    expect(await attributesOf(id)).toEqual(['on-call', 'ou-blue', 'spiffe://corp.example/', 'team-payments', 'workloads']);
    expect(await serviceNames(one.body.data.token)).toContain('payments-api');

    // Same certificate again: nothing changes (and nothing is written).
    const updatedAt = (await mgmt('GET', `/identities/${id}`)).body.data.updatedAt;
    c.clock.advance(1000);
    expect((await certLogin(first)).status).toBe(200);
    expect((await mgmt('GET', `/identities/${id}`)).body.data.updatedAt).toBe(updatedAt);

    // A new certificate for the identity (re-enrolled with the CA): another team, no OU.
    const authId = (await mgmt('GET', `/identities/${id}`)).body.data.authenticators.cert.id;
    const re = await mgmt('POST', `/authenticators/${authId}/re-enroll`, { expiresAt: new Date(c.clock.now().getTime() + 3600_000).toISOString() });
    expect(re.status, re.text).toBe(201);
    const token = (await mgmt('GET', `/identities/${id}`)).body.data.enrollment.ottca.token;
    const second = ca.issue('worker-1', { uris: ['spiffe://corp.example/team/search/worker-1'] });
    const e2 = await c.call('POST', `${CLIENT}/enroll/ottca?token=${token}`, { cert: second.certPem, key: second.keyPem });
    expect(e2.status, e2.text).toBe(200);
    const two = await certLogin(second);
    expect(two.status, two.text).toBe(200);
    expect(await attributesOf(id)).toEqual(['on-call', 'spiffe://corp.example/', 'team-search', 'workloads']);
    expect(await serviceNames(two.body.data.token)).not.toContain('payments-api');
    expect((await c.call('GET', `${CLIENT}/services/${serviceId}`, { token: two.body.data.token })).status).toBe(404);

    // An admin's attribute the rules would give too stays the admin's; rules removed from the CA take theirs back.
    expect((await mgmt('PATCH', `/identities/${id}`, { roleAttributes: ['workloads', 'on-call', 'team-search', 'spiffe://corp.example/', 'team-payments'] })).status).toBe(200);
    expect((await mgmt('PATCH', `/cas/${caId}`, { roleAttributeClaims: [] })).status).toBe(200);
    expect((await certLogin(second)).status).toBe(200);
    expect(await attributesOf(id)).toEqual(['on-call', 'team-payments', 'workloads']);
  });
});
