// Enrollment bodies in every form upstream's clients send, with real CSRs over TLS. Upstream's document
// describes POST /enroll/ott as "a one-time-token supplied via a query string parameter" with "PEM encoded
// CSRs", while its schema is the JSON ottEnrollmentRequest {token, clientCsr}; SDKs of different ages send
// either. The Go SDK (ziti/enroll/enroll.go) posts the PEM CSR as application/x-pem-file to
// /enroll?method=ott&token=... and reads a JSON envelope or a PEM answer by content type; routers
// (router/enroll/enroll.go) post JSON CSRs to /enroll?method=erott&token=...; ottca and ca post an empty
// text/plain body with the certificate on the TLS connection.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wantsPem } from '../../src/server/routes/client/enroll.js';
import { CLIENT, expectError, MGMT } from '../helpers/controller.js';
import { ecCsr, rsaCsr, TestCa } from '../helpers/certs.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

let c: TlsController;
let admin: string;
beforeAll(async () => {
  c = await startTlsController();
  admin = await c.login();
});
afterAll(() => c.close());

const ottToken = async (name: string) => {
  const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, enrollment: { ott: true } } });
  expect(r.status, r.text).toBe(201);
  const id = r.body.data.id as string;
  return { id, token: (await c.call('GET', `${MGMT}/identities/${id}`, { token: admin })).body.data.enrollment.ott.token as string };
};

const issuedTo = (pem: string, id: string) => {
  const cert = new X509Certificate(pem);
  const intermediate = new X509Certificate(c.running.ctx.pki.intermediatePem);
  return cert.subject.includes(`CN=${id}`) && cert.checkIssued(intermediate) && cert.verify(intermediate.publicKey);
};

describe('POST /enroll/ott', () => {
  it('takes the token in the query and the CSR as a PEM body, under each PEM media type', async () => {
    for (const contentType of ['application/x-pem-file', 'application/pkcs10', 'text/plain', 'text/plain; charset=utf-8']) {
      const { id, token } = await ottToken(`ott-pem-${contentType.replace(/\W+/g, '-')}`);
      const r = await c.call('POST', `${CLIENT}/enroll/ott?token=${token}`, { body: ecCsr(id).csrPem, contentType });
      expect(r.status, `${contentType}: ${r.text}`).toBe(200);
      expect(issuedTo(r.body.data.cert, id), contentType).toBe(true);
      expect(r.body.data.ca).toBe(c.running.ctx.pki.caBundlePem);
    }
  });

  it('takes JSON {token, clientCsr}, and JSON {clientCsr} with the token in the query', async () => {
    const a = await ottToken('ott-json-body');
    const r = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: a.token, clientCsr: rsaCsr().csrPem } });
    expect(r.status, r.text).toBe(200);
    expect(issuedTo(r.body.data.cert, a.id)).toBe(true);
    const b = await ottToken('ott-json-query');
    const q = await c.call('POST', `${CLIENT}/enroll/ott?token=${b.token}`, { body: { clientCsr: ecCsr().csrPem } });
    expect(q.status, q.text).toBe(200);
    expect(issuedTo(q.body.data.cert, b.id)).toBe(true);
  });

  it('answers in the form Accept prefers: the JSON envelope by default (upstream produces JSON here), PEM when asked', async () => {
    const cases: [string, 'pem' | 'json'][] = [
      ['application/x-pem-file', 'pem'],
      ['application/json;q=0.5, application/x-pem-file', 'pem'],
      ['application/json', 'json'],
      ['*/*', 'json'],
      ['', 'json'],
      ['application/x-pem-file;q=0.2, application/json', 'json'],
    ];
    for (const [accept, form] of cases) {
      const { id, token } = await ottToken(`ott-accept-${cases.findIndex((x) => x[0] === accept)}`);
      const r = await c.call('POST', `${CLIENT}/enroll/ott?token=${token}`, { body: ecCsr().csrPem, contentType: 'application/x-pem-file', accept });
      expect(r.status, `${accept}: ${r.text}`).toBe(200);
      if (form === 'pem') {
        expect(r.headers['content-type'], accept).toMatch(/^application\/x-pem-file/);
        expect(issuedTo(r.text, id), accept).toBe(true);
      } else {
        expect(r.headers['content-type'], accept).toMatch(/^application\/json/);
        expect(issuedTo(r.body.data.cert, id), accept).toBe(true);
      }
    }
  });

  it('refuses what is not a CSR or has no token with the envelope, and keeps the token for a good retry', async () => {
    const { id, token } = await ottToken('ott-refusals-forms');
    expectError(await c.call('POST', `${CLIENT}/enroll/ott?token=${token}`, { body: 'not a csr', contentType: 'application/x-pem-file' }), 400, 'COULD_NOT_PROCESS_CSR');
    expectError(await c.call('POST', `${CLIENT}/enroll/ott?token=${token}`, { body: '', contentType: 'text/plain' }), 400, 'COULD_NOT_PROCESS_CSR');
    expectError(await c.call('POST', `${CLIENT}/enroll/ott?token=${token}`, { body: { clientCsr: 42 } }), 400, 'COULD_NOT_PARSE_BODY'); // upstream 1.1.10: its decoder's answer
    expectError(await c.call('POST', `${CLIENT}/enroll/ott`, { body: ecCsr().csrPem, contentType: 'application/x-pem-file' }), 400, 'INVALID_ENROLLMENT_TOKEN');
    expectError(await c.call('POST', `${CLIENT}/enroll/ott?token=${token}`, { body: ecCsr().csrPem, contentType: 'application/octet-stream' }), 400, 'INVALID_CONTENT_TYPE');
    const r = await c.call('POST', `${CLIENT}/enroll/ott?token=${token}`, { body: ecCsr().csrPem, contentType: 'application/x-pem-file' });
    expect(r.status, r.text).toBe(200);
    expect(issuedTo(r.body.data.cert, id)).toBe(true);
    expectError(await c.call('POST', `${CLIENT}/enroll/ott?token=${token}`, { body: ecCsr().csrPem, contentType: 'application/x-pem-file' }), 400, 'INVALID_ENROLLMENT_TOKEN');
  });
});

describe('POST /enroll (the URL in enrollment JWTs)', () => {
  it('ott as the Go SDK sends it (PEM body, no Accept): PEM certificate; with Accept JSON: the envelope', async () => {
    const a = await ottToken('legacy-go-sdk');
    const pem = await c.call('POST', `${CLIENT}/enroll?method=ott&token=${a.token}`, { body: ecCsr().csrPem, contentType: 'application/x-pem-file', accept: '' });
    expect(pem.status, pem.text).toBe(200);
    expect(pem.headers['content-type']).toMatch(/^application\/x-pem-file/);
    expect(issuedTo(pem.text, a.id)).toBe(true);
    const b = await ottToken('legacy-json');
    const json = await c.call('POST', `${CLIENT}/enroll?token=${b.token}`, { body: ecCsr().csrPem, contentType: 'application/pkcs10', accept: 'application/json' });
    expect(json.status, json.text).toBe(200);
    expect(issuedTo(json.body.data.cert, b.id)).toBe(true);
  });

  it('erott as routers send it: JSON CSRs, token in the query, the JSON envelope back', async () => {
    const created = await c.call('POST', `${MGMT}/edge-routers`, { token: admin, body: { name: 'legacy-router' } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as string;
    const { enrollmentToken } = (await c.call('GET', `${MGMT}/edge-routers/${id}`, { token: admin })).body.data;
    const r = await c.call('POST', `${CLIENT}/enroll?method=erott&token=${enrollmentToken}`, { body: { certCsr: ecCsr(id).csrPem, serverCertCsr: ecCsr(id).csrPem }, accept: '' });
    expect(r.status, r.text).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/json/);
    expect(new X509Certificate(r.body.data.cert).subject).toContain(`CN=${id}`);
    expect(r.body.data.serverCert).toContain('BEGIN CERTIFICATE');
    expect(r.body.data.ca).toBe(c.running.ctx.pki.caBundlePem);
    expect((await c.call('GET', `${MGMT}/edge-routers/${id}`, { token: admin })).body.data.isVerified).toBe(true);
  });
});

describe('POST /enroll/ottca and /enroll/ca', () => {
  it('take the token in the query or in JSON, with an empty text/plain body as the Go SDK sends, or a JSON one', async () => {
    const ca = new TestCa('FormsCA');
    const made = await c.call('POST', `${MGMT}/cas`, { token: admin, body: { name: ca.name, certPem: ca.pem, identityRoles: [], identityNameFormat: '[caName]-[commonName]', isAuthEnabled: true, isAutoCaEnrollmentEnabled: true, isOttCaEnrollmentEnabled: true } });
    expect(made.status, made.text).toBe(201);
    const caId = made.body.data.id as string;
    const verification = (await c.call('GET', `${MGMT}/cas/${caId}`, { token: admin })).body.data.verificationToken;
    expect((await c.call('POST', `${MGMT}/cas/${caId}/verify`, { token: admin, body: ca.issue(verification).certPem, contentType: 'text/plain' })).status).toBe(200);
    const ottcaToken = async (name: string) => {
      const r = await c.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, enrollment: { ottca: caId } } });
      return (await c.call('GET', `${MGMT}/identities/${r.body.data.id}`, { token: admin })).body.data.enrollment.ottca.token as string;
    };
    const forms: [string, (t: string) => { path: string; body: unknown; contentType?: string }][] = [
      ['query, empty text/plain', (t) => ({ path: `/enroll/ottca?token=${t}`, body: '', contentType: 'text/plain' })],
      ['query, generic /enroll', (t) => ({ path: `/enroll?method=ottca&token=${t}`, body: '', contentType: 'text/plain' })],
      ['JSON token', (t) => ({ path: '/enroll/ottca', body: { token: t } })],
      ['query, PEM body ignored', (t) => ({ path: `/enroll/ottca?token=${t}`, body: ecCsr().csrPem, contentType: 'application/x-pem-file' })],
    ];
    for (const [what, form] of forms) {
      const token = await ottcaToken(`ottca-${what.replace(/\W+/g, '-')}`);
      const device = ca.issue(`ottca-${what.replace(/\W+/g, '-')}`);
      const f = form(token);
      const r = await c.call('POST', `${CLIENT}${f.path}`, { body: f.body, contentType: f.contentType, cert: device.certPem, key: device.keyPem });
      expect(r.status, `${what}: ${r.text}`).toBe(200);
      expect(r.body.data, what).toEqual({});
    }
    const device = ca.issue('auto-forms');
    const auto = await c.call('POST', `${CLIENT}/enroll/ca`, { body: '', contentType: 'text/plain', cert: device.certPem, key: device.keyPem });
    expect(auto.status, auto.text).toBe(200);
    const again = ca.issue('auto-forms-json');
    expect((await c.call('POST', `${CLIENT}/enroll?method=ca`, { body: {}, cert: again.certPem, key: again.keyPem })).status).toBe(200);
  });
});

describe('Accept negotiation', () => {
  it('prefers the higher quality, an exact type over a wildcard, and the default on a tie', () => {
    expect(wantsPem(undefined, true)).toBe(true);
    expect(wantsPem(undefined, false)).toBe(false);
    expect(wantsPem('*/*', true)).toBe(true);
    expect(wantsPem('application/*', false)).toBe(false);
    expect(wantsPem('application/x-pem-file, */*;q=0.8', false)).toBe(true);
    expect(wantsPem('application/json, */*', true)).toBe(false);
    expect(wantsPem('application/json;q=0.1, application/x-pem-file;q=0.9', false)).toBe(true);
    expect(wantsPem('text/html', true)).toBe(true);
  });
});
