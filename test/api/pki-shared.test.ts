// Renewal with several controllers on one PostgreSQL database (runs when ZTC_TEST_DB names a server):
// each renews its own server certificate, and the others keep accepting what its replaced key signed
// (its row lists it) and publish it in their JWKS; the intermediate, which they share, is renewed by
// one (its claim in the database) and adopted by the others at their next look, so what either issues
// the other trusts; two due at once make one new intermediate, not two.
import { X509Certificate } from 'node:crypto';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renewAt } from '../../src/model/pki/pki.js';
import { ecCsr } from '../helpers/certs.js';
import { ADMIN, CLIENT, MGMT } from '../helpers/controller.js';
import { oidcClient } from '../helpers/oidc.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

const onPostgres = !!process.env.ZTC_TEST_DB;

describe.skipIf(!onPostgres)('two controllers on one database renewing', () => {
  let a: TlsController;
  let b: TlsController;
  beforeAll(async () => {
    // Both from the same PKI template: one root, one intermediate, one secrets key (docs/postgresql.md).
    a = await startTlsController({ router: false, ctrl: false });
    b = await startTlsController({ router: false, ctrl: false, db: a.running.ctx.config.db });
    for (const c of [a, b]) c.running.app.pkiRenewal.stop();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const kids = async (c: TlsController) => (await c.call('GET', '/oidc/keys')).body.keys.map((k: { kid: string }) => k.kid) as string[];
  const enrolled = async (via: TlsController, name: string) => {
    const admin = await via.login();
    const made = await via.call('POST', `${MGMT}/identities`, { token: admin, body: { name, type: 'Device', isAdmin: false, enrollment: { ott: true } } });
    const ott = (await via.call('GET', `${MGMT}/identities/${made.body.data.id}`, { token: admin })).body.data.enrollment.ott;
    const { csrPem, keyPem } = ecCsr(name);
    const r = await via.call('POST', `${CLIENT}/enroll/ott`, { body: { token: ott.token, clientCsr: csrPem } });
    expect(r.status, r.text).toBe(200);
    return { cert: r.body.data.cert as string, key: keyPem };
  };
  const certLogin = (via: TlsController, who: { cert: string; key: string }) => via.call('POST', `${CLIENT}/authenticate?method=cert`, { cert: who.cert, key: who.key, body: {} });

  it('a token one controller signed before its renewal is still accepted by the other, whose JWKS lists both keys', async () => {
    const t1 = (await oidcClient(a).goPassword(ADMIN.username, ADMIN.password)).access_token;
    const ka1 = a.running.ctx.pki.signingJwk.kid;
    expect(decodeProtectedHeader(t1).kid).toBe(ka1);
    expect((await b.call('GET', `${CLIENT}/current-identity`, { bearer: t1 })).status).toBe(200);
    await a.running.app.pkiRenewal.renew('server');
    const ka2 = a.running.ctx.pki.signingJwk.kid;
    expect(ka2).not.toBe(ka1);
    // The other controller: the old token still good (the key's row says it is kept), the new one too.
    expect((await b.call('GET', `${CLIENT}/current-identity`, { bearer: t1 })).status).toBe(200);
    const t2 = (await oidcClient(a).goPassword(ADMIN.username, ADMIN.password)).access_token;
    expect(decodeProtectedHeader(t2).kid).toBe(ka2);
    expect((await b.call('GET', `${CLIENT}/current-identity`, { bearer: t2 })).status).toBe(200);
    expect(await kids(b)).toEqual(expect.arrayContaining([b.running.ctx.pki.signingJwk.kid, ka1, ka2]));
    expect((await kids(b))[0]).toBe(b.running.ctx.pki.signingJwk.kid);
  });

  it('the intermediate one renews, the other adopts at its next look; each trusts what the other issues', async () => {
    const before = await enrolled(a, 'shared-before');
    const old = a.running.ctx.pki.intermediatePem;
    const out = await a.running.app.pkiRenewal.renew('intermediate');
    expect(out.renewed).toEqual([{ certificate: 'intermediate', reason: 'operator' }, { certificate: 'server', reason: 'operator' }]);
    const mid = a.running.ctx.pki.intermediatePem;
    expect(b.running.ctx.pki.intermediatePem).toBe(old);
    const adopted = await b.running.app.pkiRenewal.check();
    expect(adopted.renewed).toEqual([{ certificate: 'intermediate', reason: 'adopted' }, { certificate: 'server', reason: 'adopted' }]);
    expect(b.running.ctx.pki.intermediatePem).toBe(mid);
    expect(new X509Certificate(b.running.ctx.pki.serverPem).checkIssued(new X509Certificate(mid))).toBe(true);
    expect(b.running.ctx.pki.retiredIntermediatePems).toContain(old);
    // Issued by the new intermediate at one, logging in at the other; and one issued before, at both.
    const after = await enrolled(b, 'shared-after');
    expect(new X509Certificate(after.cert).checkIssued(new X509Certificate(mid))).toBe(true);
    for (const c of [a, b]) {
      expect((await certLogin(c, after)).status).toBe(200);
      expect((await certLogin(c, before)).status).toBe(200);
    }
  });

  it('two controllers due at once make one new intermediate, which both use', async () => {
    const due = renewAt(a.running.ctx.pki.intermediatePem) + 60_000;
    for (const c of [a, b]) c.clock.advance(due - c.clock.now().getTime());
    const [ra, rb] = await Promise.all([a.running.app.pkiRenewal.check(), b.running.app.pkiRenewal.check()]);
    const reasons = [ra, rb].map((o) => o.renewed.find((r) => r.certificate === 'intermediate')?.reason).sort();
    expect(reasons).toEqual(['adopted', 'due']);
    expect(a.running.ctx.pki.intermediatePem).toBe(b.running.ctx.pki.intermediatePem);
    const rows = await a.running.ctx.store.db.selectFrom('pkiIntermediates').select(['id', 'replaces']).execute();
    // The first, and one replacement each: a chain, no fork.
    expect(rows).toHaveLength(3);
    expect(new Set(rows.map((r) => r.replaces)).size).toBe(3);
  });
});
