// The controller's certificates renewing by themselves (model/pki/renewal.ts), the API side: a renewal
// that fails is an event, a metric, a warning in `pki status` and, a week overdue, an unhealthy
// readiness check; the next look that can renews and clears it. A renewal made on the data dir by a
// command in local mode (`ztc pki renew -d`) is taken up by the running controller at its next look,
// served at once over TLS. The intermediate renews at its time too (and the server certificate with it).
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ZtcEvent } from '../../src/model/events/types.js';
import { renewAt, renewPki } from '../../src/model/pki/pki.js';
import { MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

const DAY = 86_400_000;
let c: TlsController;
const events: ZtcEvent[] = [];
beforeAll(async () => {
  c = await startTlsController({ router: false, ctrl: false });
  c.running.app.pkiRenewal.stop();
  c.running.ctx.events.subscribe((e) => void events.push(e));
});
afterAll(() => c.close());

const pkiEvents = (type: string) => events.filter((e): e is Extract<ZtcEvent, { namespace: 'pki' }> => e.namespace === 'pki' && e.event_type === type);

function served(): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: c.running.ctx.config.port, ca: c.running.ctx.pki.rootPem, servername: 'localhost' }, () => {
      resolve(new X509Certificate(s.getPeerCertificate().raw));
      s.end();
    });
    s.on('error', reject);
  });
}

async function health() {
  const r = await c.call('GET', '/health-checks');
  return { status: r.status, check: JSON.parse(r.text).data.checks.find((x: { id: string }) => x.id === 'pki.renewal') as { healthy: boolean; details: string } };
}

describe('a renewal that fails', () => {
  const retired = () => path.join(c.dataDir, 'pki', 'retired');
  it('is an event, a metric and a warning, and a week overdue the readiness check fails; the next look that can renews', async () => {
    const renewal = c.running.app.pkiRenewal;
    // Renewals cannot move anything to pki/retired: it is a file.
    fs.rmSync(retired(), { recursive: true, force: true });
    fs.writeFileSync(retired(), 'in the way');
    c.clock.advance(renewAt(c.running.ctx.pki.serverPem) + 60_000 - c.clock.now().getTime());
    const before = c.running.ctx.pki.serverFingerprint;
    expect((await renewal.check()).renewed).toEqual([]);
    expect(c.running.ctx.pki.serverFingerprint).toBe(before);
    expect(pkiEvents('renewal-failed')).toMatchObject([{ certificate: 'server', error: expect.stringMatching(/EEXIST|ENOTDIR/) }]);
    expect(renewal.failure).toMatchObject({ certificate: 'server' });
    const admin = await c.login();
    const status = (await c.call('GET', `${MGMT}/pki/status?own=true`, { token: admin })).body.data;
    expect(status.warnings).toEqual([expect.stringMatching(/^the last renewal of the server failed at \S+: .+ \(tried again every minute\)$/)]);
    const metrics = (await c.call('GET', '/metrics', { token: admin, accept: 'text/plain' })).text;
    expect(metrics).toMatch(/^ztc_pki_renewals_total\{certificate="server",outcome="failed"\} 1$/m);
    expect(Number(/^ztc_certificate_renewal_seconds\{certificate="server"\} (\S+)$/m.exec(metrics)![1])).toBeLessThan(0);
    // Still ready: the certificate has months left; the details say what failed.
    let h = await health();
    expect(h.status).toBe(200);
    expect(h.check.details).toMatch(/the last renewal of the server failed/);
    // Failing for more than a week: not ready, saying why (months before the certificate ends).
    c.clock.advance(8 * DAY);
    await renewal.check();
    await new Promise((r) => setTimeout(r, 1100)); // the health answer is kept a second
    h = await health();
    expect(h.status).toBe(503);
    expect(h.check).toMatchObject({ healthy: false, details: expect.stringMatching(/^the server certificate was due to renew at \S+ and has not; the last renewal of the server failed/) });
    // The way is clear again: the next look renews, and all is well.
    fs.rmSync(retired());
    const out = await renewal.check();
    expect(out.renewed).toEqual([{ certificate: 'server', reason: 'due' }]);
    expect(renewal.failure).toBeUndefined();
    expect(c.running.ctx.pki.serverFingerprint).not.toBe(before);
    expect((await served()).fingerprint256).toBe(new X509Certificate(c.running.ctx.pki.serverPem).fingerprint256);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await health()).status).toBe(200);
  });
});

describe('a renewal made on the data dir by a command in local mode', () => {
  it('is taken up at the next look and served at once', async () => {
    const renewal = c.running.app.pkiRenewal;
    const kid = c.running.ctx.pki.signingJwk.kid;
    // What `ztc pki renew server -d DIR` does beside the running controller.
    const written = await renewPki(c.dataDir, c.running.ctx.config.hostnames, 'server', { now: c.clock.now().getTime() });
    expect((await served()).fingerprint256).not.toBe(new X509Certificate(written.serverPem).fingerprint256);
    const out = await renewal.check();
    expect(out.renewed).toEqual([{ certificate: 'server', reason: 'files' }]);
    expect((await served()).fingerprint256).toBe(new X509Certificate(written.serverPem).fingerprint256);
    expect(c.running.ctx.pki.signingJwk.kid).not.toBe(kid);
    // The key it replaced is still published.
    expect((await c.call('GET', '/oidc/keys')).body.keys.map((k: { kid: string }) => k.kid)).toContain(kid);
  });
});

describe('the intermediate', () => {
  it('renews at its time, the server certificate with it; what the old one issued stays trusted', async () => {
    const renewal = c.running.app.pkiRenewal;
    const old = c.running.ctx.pki.intermediatePem;
    c.clock.advance(renewAt(old) + 60_000 - c.clock.now().getTime());
    const out = await renewal.check();
    expect(out.renewed).toEqual([{ certificate: 'intermediate', reason: 'due' }, { certificate: 'server', reason: 'due' }]);
    const mid = new X509Certificate(c.running.ctx.pki.intermediatePem);
    expect(mid.fingerprint256).not.toBe(new X509Certificate(old).fingerprint256);
    expect((await served()).checkIssued(mid)).toBe(true);
    expect(c.running.ctx.pki.retiredIntermediatePems).toContain(old);
    expect(pkiEvents('renewed').map((e) => [e.certificate, e.reason])).toEqual(expect.arrayContaining([['intermediate', 'due']]));
    // Recorded for the other controllers of the database (one row naming the one it replaced).
    const rows = await c.running.ctx.store.db.selectFrom('pkiIntermediates').select(['id', 'replaces']).execute();
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.replaces)!.replaces).toBe(rows.find((r) => !r.replaces)!.id);
  });
});
