// GET /pki/status (our extension) and the expiry warnings: every certificate the controller holds or
// issued with its days left, and a warning in the log 30 days before one of its own expires.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/model/clock.js';
import { newKeyAndCsr } from '../../src/model/pki/csr.js';
import { startController } from '../../src/server/controller.js';
import { TestCa } from '../helpers/certs.js';
import { CLIENT, expectError, MGMT, startTestController, tempDataDir, testConfig, testDatabase, type TestController } from '../helpers/controller.js';

const DAY = 86_400_000;

describe('pki status', () => {
  let c: TestController;
  let token: string;
  const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token, body });
  const status = async (q = '') => {
    const r = await mg('GET', `/pki/status${q}`);
    expect(r.status, r.text).toBe(200);
    return r.body.data as { certificates: { kind: string; name: string; ownerId: string | null; notAfter: string | null; daysLeft: number | null; fingerprint: string }[]; warnings: string[] };
  };

  beforeAll(async () => {
    c = await startTestController();
    token = await c.login();
  });
  afterAll(() => c.close());

  it('lists the controller\'s own certificates with the days they have left', async () => {
    const s = await status();
    expect(s.certificates.map((x) => x.kind)).toEqual(['root', 'intermediate', 'server', 'signer']);
    const server = s.certificates.find((x) => x.kind === 'server')!;
    const expected = Math.floor((Date.parse(new X509Certificate(c.opened.ctx.pki.serverPem).validTo) - c.clock.now().getTime()) / DAY);
    expect(server.daysLeft).toBe(expected);
    expect(server.fingerprint).toMatch(/^([0-9a-f]{2}:){31}[0-9a-f]{2}$/); // SHA-256, as the login prompt shows it
    // The signer is the server certificate's key: its dates are that certificate's.
    expect(s.certificates.find((x) => x.kind === 'signer')).toMatchObject({ notAfter: server.notAfter, daysLeft: expected, fingerprint: c.opened.ctx.pki.signingJwk.kid });
    expect(s.warnings).toEqual([]);
  });

  it('adds trusted CAs and the certificates issued to identities and routers', async () => {
    const ca = new TestCa('partner-ca');
    const caId = (await mg('POST', '/cas', { name: 'partner', certPem: ca.pem, identityRoles: [], isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: false, isAuthEnabled: true })).body.data.id;
    const device = (await mg('POST', '/identities', { name: 'device-1', type: 'Device', isAdmin: false, enrollment: { ott: true } })).body.data.id;
    const ott = (await mg('GET', `/identities/${device}`)).body.data.enrollment.ott.token;
    expect((await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: ott, clientCsr: newKeyAndCsr('device-1').csrPem } })).status).toBe(200);
    const router = (await mg('POST', '/edge-routers', { name: 'er-1' })).body.data.id;
    const erott = (await mg('GET', `/edge-routers/${router}`)).body.data.enrollmentToken;
    expect((await c.call('POST', `${CLIENT}/enroll/erott`, { body: { token: erott, clientCsr: newKeyAndCsr('er-1').csrPem, serverCsr: newKeyAndCsr('er-1.example', ['er-1.example']).csrPem } })).status).toBe(200);

    const s = await status();
    const find = (kind: string) => s.certificates.filter((x) => x.kind === kind);
    const caDays = Math.floor((Date.parse(new X509Certificate(ca.pem).validTo) - c.clock.now().getTime()) / DAY);
    expect(find('ca')).toMatchObject([{ name: 'partner', ownerId: caId, daysLeft: caDays }]);
    expect(find('identity')).toMatchObject([{ name: 'device-1', ownerId: device }]);
    expect(find('identity')[0].daysLeft).toBeGreaterThan(0);
    expect(find('router')).toMatchObject([{ name: 'er-1', ownerId: router }]);
    expect(find('router-server')).toMatchObject([{ name: 'er-1', ownerId: router }]);
    expect((await status('?own=true')).certificates.map((x) => x.kind)).toEqual(['root', 'intermediate', 'server', 'signer']);
  });

  it('warns 30 days before one of its own certificates expires, and once it has', async () => {
    const intermediate = Date.parse(new X509Certificate(c.opened.ctx.pki.intermediatePem).validTo);
    c.clock.advance(intermediate - c.clock.now().getTime() - 20 * DAY);
    // The admin's session did not outlive the jump.
    token = await c.login();
    const s = await status('?own=true');
    expect(s.certificates.find((x) => x.kind === 'intermediate')!.daysLeft).toBe(20);
    expect(s.warnings).toEqual(expect.arrayContaining([expect.stringMatching(/intermediate CA certificate expires in 20 days/), expect.stringMatching(/server certificate expired on/)]));
    expect(s.warnings.some((w) => /root/.test(w))).toBe(false);
    expect(s.warnings.some((w) => /signer/.test(w))).toBe(false); // the server certificate's warning covers its key
  });

  it('answers 400 for unknown parameters and 401 without a session', async () => {
    expectError(await mg('GET', '/pki/status?own=maybe'), 400);
    expectError(await mg('GET', '/pki/status?bogus=1'), 400);
    expectError(await c.call('GET', `${MGMT}/pki/status`), 401);
  });
});

describe('the serving controller', () => {
  it('logs a warning at start when one of its own certificates is within 30 days of expiry', async () => {
    const dataDir = tempDataDir();
    const config = testConfig(dataDir, { port: 0, bind: '127.0.0.1', db: await testDatabase() });
    // First start: creates the PKI; its root lives 10 years, so a clock 20 days short of that warns.
    const quiet: string[] = [];
    let running = await startController(config, { progress: (s) => quiet.push(s) });
    const root = Date.parse(new X509Certificate(running.ctx.pki.rootPem).validTo);
    await running.close();
    expect(quiet.filter((s) => s.startsWith('warning:'))).toEqual([]);

    const said: string[] = [];
    const logged: string[] = [];
    running = await startController(config, {
      clock: new ManualClock(root - 20 * DAY),
      progress: (s) => said.push(s),
      logger: { level: 'warn', stream: { write: (line: string) => void logged.push(line) } },
    });
    try {
      expect(said).toEqual(expect.arrayContaining([expect.stringMatching(/^warning: the controller's root CA certificate expires in \d+ days/)]));
      expect(logged.some((l) => /root CA certificate expires in \d+ days/.test(l) && /"level":40/.test(l))).toBe(true);
    } finally {
      await running.close();
    }
  });
});
