// Every GET of both APIs, on a controller where every list has rows, checked against upstream's own
// response definitions (API 0.26.28) as a strict generated client reads them: every required property
// present, every value of its declared type, and null only where the definition is x-nullable (upstream
// omits unset optional properties). Lists that are usually empty (failed service requests, posture data,
// terminators, session certificates, ...) are seeded, so gaps in their items cannot hide.
// Upstream's documents live beside the project (../shared/reference/edge-api); without them this file skips.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, MGMT, startTestController, type TestController } from '../helpers/controller.js';
import { ecCsr, TestCa } from '../helpers/certs.js';
import { conformance, upstreamDocs, type SwaggerDoc } from '../helpers/upstream-schema.js';

const docs = upstreamDocs();
let c: TestController;
let admin: string;
let user: string;
const ids: Record<string, string> = {};

async function must(method: string, url: string, body?: unknown, token = admin) {
  const r = await c.call(method, url, { token, body });
  if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${r.text}`);
  return r.body?.data;
}

beforeAll(async () => {
  if (!docs) return;
  c = await startTestController();
  admin = await c.login();
  ids.identity = await c.user('walker', { password: 'password1' });
  ids.device = (await must('POST', `${MGMT}/identities`, { name: 'walker-device', type: 'Device', isAdmin: false, roleAttributes: ['devices'], enrollment: { ott: true } })).id;
  ids.ca = (await must('POST', `${MGMT}/cas`, { name: 'walker-ca', certPem: new TestCa('Walker CA').pem, identityRoles: ['from-ca'], isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true, isAuthEnabled: true })).id;
  ids.signer = (await must('POST', `${MGMT}/external-jwt-signers`, { name: 'walker-idp', enabled: true, issuer: 'https://idp.example', audience: 'ztc', jwksEndpoint: 'https://idp.example/jwks', clientId: 'ztc-client', externalAuthUrl: 'https://idp.example/auth', scopes: ['openid'] })).id;
  ids.authPolicy = (await must('POST', `${MGMT}/auth-policies`, {
    name: 'walker-policy',
    primary: { cert: { allowed: true, allowExpiredCerts: false }, updb: { allowed: true, minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false, maxAttempts: 5, lockoutDurationMinutes: 0 }, extJwt: { allowed: true, allowedSigners: [ids.signer] } },
    secondary: { requireTotp: false },
  })).id;
  const types = await must('GET', `${MGMT}/config-types?limit=-1`);
  const typeId = (n: string) => types.find((t: { name: string }) => t.name === n).id;
  ids.intercept = (await must('POST', `${MGMT}/configs`, { name: 'walker-intercept', configTypeId: typeId('intercept.v1'), data: { protocols: ['tcp'], addresses: ['walker.internal'], portRanges: [{ low: 80, high: 80 }] } })).id;
  ids.host = (await must('POST', `${MGMT}/configs`, { name: 'walker-host', configTypeId: typeId('host.v1'), data: { protocol: 'tcp', address: '127.0.0.1', port: 80 } })).id;
  ids.service = (await must('POST', `${MGMT}/services`, { name: 'walker-svc', encryptionRequired: true, roleAttributes: ['walk'], configs: [ids.intercept, ids.host] })).id;
  ids.guarded = (await must('POST', `${MGMT}/services`, { name: 'walker-guarded', encryptionRequired: true })).id;
  ids.router = (await must('POST', `${MGMT}/edge-routers`, { name: 'walker-er', roleAttributes: ['public'], isTunnelerEnabled: true })).id;
  ids.transit = (await must('POST', `${MGMT}/transit-routers`, { name: 'walker-tr' })).id;
  ids.posture = (await must('POST', `${MGMT}/posture-checks`, { name: 'walker-domain', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['corp'] })).id;
  await must('POST', `${MGMT}/posture-checks`, { name: 'walker-mfa', typeId: 'MFA', timeoutSeconds: 300, promptOnWake: true, promptOnUnlock: true });
  await must('POST', `${MGMT}/posture-checks`, { name: 'walker-os', typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: ['>=5.0.0'] }] });
  await must('POST', `${MGMT}/posture-checks`, { name: 'walker-proc', typeId: 'PROCESS_MULTI', semantic: 'AllOf', processes: [{ osType: 'Linux', path: '/usr/bin/agent', hashes: [], signerFingerprints: [] }] });
  await must('POST', `${MGMT}/posture-checks`, { name: 'walker-mac', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] });
  ids.dial = (await must('POST', `${MGMT}/service-policies`, { name: 'walker-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: [`@${ids.identity}`], serviceRoles: ['#walk'] })).id;
  ids.guardedPolicy = (await must('POST', `${MGMT}/service-policies`, { name: 'walker-guarded-dial', type: 'Dial', semantic: 'AllOf', identityRoles: [`@${ids.identity}`], serviceRoles: [`@${ids.guarded}`], postureCheckRoles: ['#corp'] })).id;
  await must('POST', `${MGMT}/service-policies`, { name: 'walker-bind', type: 'Bind', semantic: 'AnyOf', identityRoles: ['#devices'], serviceRoles: ['#walk'] });
  ids.erp = (await must('POST', `${MGMT}/edge-router-policies`, { name: 'walker-erp', semantic: 'AnyOf', identityRoles: ['#all'], edgeRouterRoles: ['#public'] })).id;
  ids.serp = (await must('POST', `${MGMT}/service-edge-router-policies`, { name: 'walker-serp', semantic: 'AnyOf', serviceRoles: ['#all'], edgeRouterRoles: ['#all'] })).id;
  ids.terminator = (await must('POST', `${MGMT}/terminators`, { service: ids.service, router: ids.router, binding: 'transport', address: 'tcp:127.0.0.1:80' })).id;
  await must('POST', `${MGMT}/identities/${ids.identity}/service-configs`, [{ serviceId: ids.service, configId: ids.intercept }]);

  user = await c.login('walker', 'password1');
  await must('POST', `${CLIENT}/sessions`, { serviceId: ids.service, type: 'Dial' }, user);
  // Refused for its failing posture check: a failed service request, with the check's details.
  const refused = await c.call('POST', `${CLIENT}/sessions`, { token: user, body: { serviceId: ids.guarded, type: 'Dial' } });
  expect(refused.status).toBe(401);
  const queryId = ids.posture;
  await must('POST', `${CLIENT}/posture-response`, { id: queryId, typeId: 'DOMAIN', domain: 'other.example' }, user);
  await must('POST', `${CLIENT}/posture-response`, { id: 'walker-os-q', typeId: 'OS', type: 'Linux', version: '6.1.0', build: '1' }, user).catch(() => undefined);
  await must('POST', `${CLIENT}/current-api-session/certificates`, { csr: ecCsr('walker-session').csrPem }, user);
  await must('POST', `${MGMT}/database/check-data-integrity`).catch(() => undefined);
}, 180_000);
afterAll(() => c?.close());

/** Upstream's GET operations of one API, with the path parameters a seeded controller can fill. */
function getOperations(doc: SwaggerDoc) {
  return Object.entries(doc.paths)
    .filter(([, ops]) => ops.get)
    .map(([p, ops]) => ({ path: p, schema: ops.get.responses?.['200']?.schema, produces: ops.get.produces as string[] | undefined }));
}

/** An id to put in `{id}`: the first row of the path's parent list. */
async function fill(api: 'client' | 'management', p: string, token: string): Promise<string | undefined> {
  const base = api === 'client' ? CLIENT : MGMT;
  let out = p.replace('{serviceId}', ids.service);
  const m = /^(.*?)\/\{id\}/.exec(out);
  if (m) {
    // Parents chosen so that the child list has rows.
    const fixed: Record<string, string> = { '/identities': ids.identity, '/identities/{id}/enrollments': ids.device, '/services': ids.service, '/cas': ids.ca, '/service-policies/{id}/posture-checks': ids.guardedPolicy };
    let id = fixed[p] ?? fixed[m[1]];
    if (!id) {
      const listed = await c.call('GET', `${base}${m[1]}?limit=1`, { token });
      id = listed.body?.data?.[0]?.id ?? (Array.isArray(listed.body?.data) ? undefined : listed.body?.data?.id);
    }
    if (!id) return undefined;
    out = out.replace('{id}', id);
  }
  return `${base}${out}`;
}

// Answers that are not JSON documents, or that need a state this walk does not set up.
const NOT_JSON = new Set(['/.well-known/est/cacerts', '/current-identity/mfa/qr-code', '/cas/{id}/jwt', '/specs/{id}/spec', '/enroll/jwks']);
const NEEDS_STATE = new Set(['/current-identity/mfa', '/current-identity/mfa/recovery-codes']);
// Upstream's document names the wrong definition here (service policies); its controller answers service
// edge router policies, and so do we.
const WRONG_UPSTREAM_DEFINITION = new Set(['/edge-routers/{id}/service-edge-router-policies']);

// Required properties that upstream's own controller answers as null when unset, though its document does
// not mark them x-nullable: go-swagger makes a required property a pointer without omitempty, and the
// detail mappers leave these nil (external_jwt_signer_api_model.go, router_api_model.go). We answer the
// same (test/api/upstream-values.test.ts); a client that reads upstream reads these.
const UPSTREAM_SENDS_NULL: Record<string, string[]> = {
  'external-jwt-signers': ['fingerprint', 'kid', 'clientId', 'externalAuthUrl', 'audience', 'claimsProperty', 'certPem', 'jwksEndpoint'],
  routers: ['fingerprint'],
  'transit-routers': ['fingerprint'],
};
const sentNullUpstream = (path: string, problem: string) => {
  const m = /^\$\.data(?:\[\d+\])?\.(\w+): null where the definition is not nullable$/.exec(problem);
  return !!m && (UPSTREAM_SENDS_NULL[path.split('/')[1] ?? ''] ?? []).includes(m[1]!);
};

describe.skipIf(!docs)('every GET answers what upstream’s definitions require', () => {
  for (const api of ['client', 'management'] as const) {
    it(`${api} API`, async () => {
      const doc = docs![api];
      const problems: string[] = [];
      let checked = 0;
      for (const op of getOperations(doc)) {
        if (NOT_JSON.has(op.path) || NEEDS_STATE.has(op.path) || WRONG_UPSTREAM_DEFINITION.has(op.path) || !op.schema) continue;
        const token = api === 'client' ? user : admin;
        const url = await fill(api, op.path, token);
        if (!url) {
          problems.push(`${op.path}: nothing seeded to fill its path`);
          continue;
        }
        const r = await c.call('GET', url, { token });
        if (r.status !== 200) {
          problems.push(`${op.path}: ${r.status} ${r.text.slice(0, 200)}`);
          continue;
        }
        const data = r.body?.data;
        if (Array.isArray(data) && data.length === 0 && !['/sessions', '/current-identity/edge-routers'].includes(op.path)) {
          // An empty list proves nothing about its items: seed it above.
          if (!/role-attributes|data-integrity-results|controllers/.test(op.path)) problems.push(`${op.path}: empty list (seed it)`);
        }
        problems.push(...conformance(doc, op.schema, r.body).filter((p) => !sentNullUpstream(op.path, p)).map((p) => `${op.path}: ${p}`));
        checked++;
      }
      expect(problems).toEqual([]);
      expect(checked).toBeGreaterThan(api === 'client' ? 20 : 80);
    }, 120_000);
  }
});
