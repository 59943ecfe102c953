import { execFileSync } from 'node:child_process';
import forge from 'node-forge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT, expectError, MGMT, startTestController, type TestController } from '../helpers/controller.js';

let c: TestController;
beforeAll(async () => {
  c = await startTestController();
});
afterAll(() => c.close());

describe('informational routes (no session needed)', () => {
  it('answers HEAD where probes send it (version, health checks, docs), and not on API resources', async () => {
    for (const url of ['/version', `${CLIENT}/version`, `${MGMT}/version`, '/health-checks', '/docs']) {
      const r = await c.call('HEAD', url);
      expect(r.status, url).toBe(200);
      expect(r.text, url).toBe('');
    }
    const token = await c.login();
    expect((await c.call('HEAD', `${MGMT}/identities`, { token })).status).toBe(405);
  });

  it('answers version at the root and under both APIs', async () => {
    for (const url of ['/version', '/', `${CLIENT}/version`, `${CLIENT}/`, `${MGMT}/version`, `${MGMT}`]) {
      const r = await c.call('GET', url);
      expect(r.status, url).toBe(200);
      expect(r.body.meta).toEqual({ apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' });
      const v = r.body.data;
      expect(v.version).toMatch(/^v\d+\.\d+\.\d+/);
      expect(v.runtimeVersion).toBe(process.version);
      expect(v.apiVersions['edge-client'].v1.path).toBe(CLIENT);
      expect(v.apiVersions['edge-management'].v1.path).toBe(MGMT);
      expect(v.apiVersions.edge.v1.apiBaseUrls[0]).toMatch(/^https:\/\/.+\/edge\/client\/v1$/);
    }
  });

  it('lists capabilities and API specs, and serves an OpenAPI document built from the routes', async () => {
    expect((await c.call('GET', `${CLIENT}/enumerated-capabilities`)).body.data).toContain('OIDC_AUTH');
    const specs = (await c.call('GET', `${MGMT}/specs`)).body.data;
    expect(specs.map((s: { id: string }) => s.id).sort()).toEqual(['edge-client', 'edge-management', 'fabric']);
    expect(specs.find((s: { id: string }) => s.id === 'edge-client')._links).toEqual({ self: { href: './specs/edge-client' }, spec: { href: './specs/edge-client/spec' } });
    expect((await c.call('GET', `${CLIENT}/specs/edge-client`)).body.data.name).toBe('Edge Client API');
    expectError(await c.call('GET', `${CLIENT}/specs/nope`), 404, 'NOT_FOUND');

    const mgmt = JSON.parse((await c.call('GET', `${MGMT}/specs/edge-management/spec`)).body.data);
    expect(mgmt.openapi).toMatch(/^3\./);
    expect(Object.keys(mgmt.paths)).toEqual(expect.arrayContaining([`${MGMT}/identities`, `${MGMT}/identities/{id}`, `${MGMT}/authenticators`, `${MGMT}/identity-types`]));
    expect(mgmt.paths[`${MGMT}/identities`].post.operationId).toBe('createIdentity');
    expect(mgmt.paths[`${MGMT}/identities`].get.security).toEqual([{ ztSession: [] }]);
    expect(mgmt.paths[`${MGMT}/version`].get.security).toBeUndefined();
    const client = JSON.parse((await c.call('GET', `${CLIENT}/specs/edge-client/spec`)).body.data);
    expect(Object.keys(client.paths)).toContain(`${CLIENT}/authenticate`);
    expect(Object.keys(client.paths)).not.toContain(`${CLIENT}/identities`);
    const yaml = await c.call('GET', `${MGMT}/specs/edge-management/spec?format=yaml`);
    expect(yaml.headers['content-type']).toMatch(/yaml/);
    expect(yaml.text).toMatch(/^openapi: /m);
  });

  it('serves the CA store as base64 PKCS#7 holding the controller chain', async () => {
    for (const url of ['/.well-known/est/cacerts', `${CLIENT}/.well-known/est/cacerts`, `${MGMT}/.well-known/est/cacerts`]) {
      const r = await c.call('GET', url);
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toMatch(/application\/pkcs7-mime/);
      const p7 = forge.pkcs7.messageFromAsn1(forge.asn1.fromDer(forge.util.decode64(r.text))) as unknown as { certificates: forge.pki.Certificate[] };
      const pems = p7.certificates.map((x) => forge.pki.certificateToPem(x).replace(/\r/g, ''));
      expect(pems).toEqual([c.opened.ctx.pki.intermediatePem, c.opened.ctx.pki.rootPem].map((p) => p.replace(/\r/g, '')));
    }
  });

  // The C SDK (1.18, in ziti-edge-tunnel) reads the store with OpenSSL's BIO base64 filter, which reads
  // nothing from a line longer than its buffer: upstream wraps at 64 columns, and one 3,400-character
  // line crashed the SDK at every enrollment and login. `openssl base64 -d` (without -A) is that reader.
  it('wraps the CA store at 64 columns, so OpenSSL\'s base64 reader decodes it', async () => {
    for (const url of ['/.well-known/est/cacerts', `${CLIENT}/.well-known/est/cacerts`, `${MGMT}/.well-known/est/cacerts`]) {
      const r = await c.call('GET', url);
      expect(r.status).toBe(200);
      const lines = r.text.split('\n');
      expect(lines.pop(), 'ends with a newline').toBe('');
      expect(lines.length).toBeGreaterThan(1);
      for (const line of lines) expect(line.length, url).toBeLessThanOrEqual(64);
      expect(lines.slice(0, -1).every((l) => l.length === 64)).toBe(true);
      const der = execFileSync('openssl', ['base64', '-d'], { input: r.text });
      expect(der.length, 'bytes OpenSSL decoded').toBeGreaterThan(1000);
      const printed = execFileSync('openssl', ['pkcs7', '-inform', 'DER', '-print_certs'], { input: der }).toString();
      const pems = printed.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/g) ?? [];
      expect(pems).toEqual([c.opened.ctx.pki.intermediatePem, c.opened.ctx.pki.rootPem]);
    }
  });

  it('answers unknown routes and methods with the error envelope and a request id', async () => {
    const nf = await c.call('GET', `${MGMT}/no-such-thing`);
    expectError(nf, 404, 'NOT_FOUND');
    expect(nf.headers['x-request-id']).toBe(nf.body.error.requestId);
    const na = await c.call('DELETE', `${CLIENT}/version`);
    expectError(na, 405, 'METHOD_NOT_ALLOWED');
    expect(na.headers.allow).toBe('GET');
    const ok = await c.call('GET', '/version');
    expect(ok.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses NUL characters anywhere in a request', async () => {
    expectError(await c.call('GET', `${MGMT}/identities/%00x`), 400, 'INVALID_FIELD');
    expectError(await c.call('GET', `${MGMT}/identities?filter=${encodeURIComponent('name = "\u0000"')}`), 400, 'INVALID_FIELD');
    expectError(await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: '{"username": "ad\\u0000min", "password": "xxxxxx"}' }), 400, 'COULD_NOT_PARSE_BODY');
  });

  it('refuses oversized and mistyped bodies', async () => {
    const big = await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'admin', password: 'x'.repeat(2 * 1024 * 1024) } });
    expectError(big, 413);
    const xml = await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: '<x/>', headers: { 'content-type': 'application/xml' } });
    expectError(xml, 400, 'INVALID_CONTENT_TYPE');
  });
});
