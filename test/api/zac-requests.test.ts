// Requests OpenZiti's admin console (ZAC 4.5) makes, found by driving it against ztc, answered as
// upstream's controller answers them. Each case is written from the request shape alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { TestCa } from '../helpers/certs.js';
import { MGMT, startTestController, tempDataDir, type TestController } from '../helpers/controller.js';

let c: TestController;
let admin: string;
beforeAll(async () => {
  c = await startTestController();
  admin = await c.login();
});
afterAll(() => c.close());

const mg = (method: string, path: string, body?: unknown) => c.call(method, `${MGMT}${path}`, { token: admin, body });

describe('built-in config types under upstream ids', () => {
  // Upstream's first migration creates its built-in config types with fixed ids, and ZAC's "simple
  // service" form posts its two configs with configTypeId "g7cIWbcGg" (intercept.v1) and "NH5p4FpGR"
  // (host.v1) without looking them up.
  it('accepts the configs of ZAC\'s simple-service form with upstream\'s fixed config type ids', async () => {
    const intercept = await mg('POST', '/configs', { name: 'svc-intercept-config', configTypeId: 'g7cIWbcGg', data: { portRanges: [{ high: 443, low: 443 }], addresses: ['simple.ziti'], protocols: ['tcp', 'udp'] } });
    expect(intercept.status, intercept.text).toBe(201);
    const host = await mg('POST', '/configs', { name: 'svc-host-config', configTypeId: 'NH5p4FpGR', data: { address: 'localhost', port: 8080, forwardProtocol: true, allowedProtocols: ['tcp'] } });
    expect(host.status, host.text).toBe(201);
    const read = (await mg('GET', `/configs/${intercept.body.data.id}`)).body.data;
    expect(read).toMatchObject({ configTypeId: 'g7cIWbcGg', configType: { id: 'g7cIWbcGg', name: 'intercept.v1' } });
  });

  it('lists every built-in type under upstream\'s id (names still resolve too)', async () => {
    const types = (await mg('GET', '/config-types?limit=-1')).body.data as { id: string; name: string }[];
    const byName = Object.fromEntries(types.map((t) => [t.name, t.id]));
    expect(byName).toMatchObject({
      'intercept.v1': 'g7cIWbcGg',
      'host.v1': 'NH5p4FpGR',
      'host.v2': 'host.v2',
      'ziti-tunneler-client.v1': 'f2dd2df0-9c04-4b84-a91e-71437ac229f1',
      'ziti-tunneler-server.v1': 'cea49285-6c07-42cf-9f52-09a9b115c783',
    });
    expect((await mg('GET', '/config-types/intercept.v1')).status).toBe(404);
    const cfg = await mg('POST', '/configs', { name: 'by-name', configTypeId: 'host.v1', data: { protocol: 'tcp', address: 'x', port: 1 } });
    expect(cfg.body.data, cfg.text).toBeTruthy();
    expect((await mg('GET', `/configs/${cfg.body.data.id}`)).body.data.configTypeId).toBe('NH5p4FpGR');
  });

  it('moves the built-in types of a database made before, with the configs and services that use them', async () => {
    const dataDir = tempDataDir();
    const first = await startTestController({ dataDir });
    const token = await first.login();
    const call = (method: string, path: string, body?: unknown) => first.call(method, `${MGMT}${path}`, { token, body });
    const cfg = (await call('POST', '/configs', { name: 'old-intercept', configTypeId: 'intercept.v1', data: { protocols: ['tcp'], addresses: ['old.ziti'], portRanges: [{ low: 1, high: 1 }] } })).body.data.id;
    const svc = (await call('POST', '/services', { name: 'old-svc', encryptionRequired: true, configs: [cfg] })).body.data.id;
    // Put the database back as earlier versions left it: built-in types under their names.
    const db = first.opened.ctx.store.db;
    await db.transaction().execute(async (tx) => {
      for (const [name, id] of [['intercept.v1', 'g7cIWbcGg'], ['host.v1', 'NH5p4FpGR']]) {
        const row = await tx.selectFrom('configTypes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        await tx.insertInto('configTypes').values({ ...row, id: name, name: `${name}-old` }).execute();
        await tx.updateTable('configs').set({ configTypeId: name }).where('configTypeId', '=', id).execute();
        await tx.updateTable('serviceConfigs').set({ configTypeId: name }).where('configTypeId', '=', id).execute();
        await tx.deleteFrom('configTypes').where('id', '=', id).execute();
        await tx.updateTable('configTypes').set({ name }).where('id', '=', name).execute();
      }
      // As a database of then: neither 0010 nor the later migrations ran (their tables and columns go too).
      await sql`delete from kysely_migration where name in ('0010-upstream-config-type-ids', '0011-data-plane', '0012-identity-types-default', '0013-long-usernames', '0014-fabric-state', '0020-identity-permissions', '0021-api-tokens', '0022-audit-events', '0025-import-journal', '0026-name-trigrams', '0027-import-finished', '0028-name-statistics', '0029-signer-target-token', '0030-revocations', '0031-authenticator-extend-requests', '0032-oidc', '0033-router-2x-fields', '0034-signer-enrollment', '0035-posture-report-only', '0036-terminator-sessions', '0037-session-grants', '0038-secondary-ext-jwt', '0039-pki-renewal', '0040-ca-router-enrollment', '0041-ca-claim-attributes', '0042-controller-ctrl-address', '0043-config-type-target')`.execute(tx);
      for (const table of ['links', 'circuits', 'api_tokens', 'audit_events', 'import_journal', 'import_runs', 'revocations']) await sql`drop table ${sql.table(table)}`.execute(tx);
      await sql`drop index api_sessions_created_at`.execute(tx);
      await sql`drop table oidc_auth_requests`.execute(tx);
      await sql`drop index api_sessions_expires_at`.execute(tx);
      await sql`alter table api_sessions drop column expires_at`.execute(tx);
      if (first.config.db) for (const index of ['identities_name_trgm', 'identities_lower_name_trgm']) await sql`drop index ${sql.id(index)}`.execute(tx);
      await sql`alter table routers drop column link_listeners`.execute(tx);
      await sql`alter table routers drop column version_info`.execute(tx);
      await sql`alter table identities drop column permissions`.execute(tx);
      await sql`alter table routers drop column online_until`.execute(tx);
      await sql`alter table routers drop column controller_id`.execute(tx);
      await sql`alter table terminators drop column host_id`.execute(tx);
      await sql`alter table api_sessions drop column token_sealed`.execute(tx);
      for (const column of ['target_token', 'enroll_name_claims_selector', 'enroll_attribute_claims_selector', 'enroll_to_cert_enabled', 'enroll_to_token_enabled', 'enroll_auth_policy_id']) await sql`alter table external_jwt_signers drop column ${sql.id(column)}`.execute(tx);
      for (const column of ['is_extend_requested', 'is_key_roll_requested', 'last_extend_rolled_keys', 'last_auth_resolved_to_root', 'extend_requested_at']) await sql`alter table authenticators drop column ${sql.id(column)}`.execute(tx);
      for (const column of ['capabilities_mask', 'ctrl_chan_listeners', 'configs']) await sql`alter table routers drop column ${sql.id(column)}`.execute(tx);
      for (const table of ['posture_checks', 'failed_service_requests']) await sql`alter table ${sql.table(table)} drop column report_only`.execute(tx);
      for (const column of ['session_id', 'peer_data']) await sql`alter table terminators drop column ${sql.id(column)}`.execute(tx);
      await sql`alter table sessions drop column granted_by`.execute(tx);
      await sql`alter table api_sessions drop column ext_jwt_pending`.execute(tx);
      for (const column of ['is_edge_router_enrollment_enabled', 'edge_router_roles', 'role_attribute_claims']) await sql`alter table cas drop column ${sql.id(column)}`.execute(tx);
      await sql`alter table identities drop column claim_role_attributes`.execute(tx);
      await sql`drop table pki_intermediates`.execute(tx);
      await sql`drop index sessions_created_at`.execute(tx);
      await sql`alter table controllers drop column retired_certs`.execute(tx);
      await sql`alter table controllers drop column ctrl_address`.execute(tx);
      await sql`alter table config_types drop column target`.execute(tx);
    });
    await first.app.close();
    await first.opened.close();

    const second = await startTestController({ dataDir, config: { db: first.config.db } });
    try {
      const t2 = await second.login();
      const get = async (path: string) => (await second.call('GET', `${MGMT}${path}`, { token: t2 })).body.data;
      expect((await get(`/configs/${cfg}`)).configType).toMatchObject({ id: 'g7cIWbcGg', name: 'intercept.v1' });
      expect((await get(`/services/${svc}`)).configs).toEqual([cfg]);
      const names = ((await get('/config-types?limit=-1')) as { id: string; name: string }[]).map((t) => `${t.name}=${t.id}`);
      expect(names).toEqual(expect.arrayContaining(['intercept.v1=g7cIWbcGg', 'host.v1=NH5p4FpGR']));
      expect(names).toHaveLength(5);
    } finally {
      await second.close();
    }
  });
});

// Upstream decodes a write body into its definition with Go's JSON decoding, which drops properties the
// definition lacks; ZAC's forms rely on that. The bodies below are ZAC 4.5's, field for field.
describe('fields upstream ignores on writes', () => {
  it('creates a transit router from ZAC\'s form, which sends the edge router fields too', async () => {
    const r = await mg('POST', '/transit-routers', { name: 'tr-zac', roleAttributes: ['ignored'], appData: {}, isTunnelerEnabled: true, noTraversal: false, cost: 0, tags: {} });
    expect(r.status, r.text).toBe(201);
    const got = (await mg('GET', `/transit-routers/${r.body.data.id}`)).body.data;
    expect(got).toMatchObject({ name: 'tr-zac', cost: 0, noTraversal: false });
    expect(got.roleAttributes).toBeUndefined();
    expect((await mg('PATCH', `/transit-routers/${r.body.data.id}`, { name: 'tr-zac-2', roleAttributes: [], appData: {}, isTunnelerEnabled: false, cost: 5 })).status).toBe(200);
    expect((await mg('GET', `/transit-routers/${r.body.data.id}`)).body.data).toMatchObject({ name: 'tr-zac-2', cost: 5 });
    // Any other undeclared field is dropped too, as upstream drops it (upstream-bodies.test.ts).
    const typo = await mg('POST', '/transit-routers', { name: 'tr-typo', nme: 'x' });
    expect(typo.status, typo.text).toBe(201);
    expect((await mg('GET', `/transit-routers/${typo.body.data.id}`)).body.data.nme).toBeUndefined();
  });

  it('ignores the empty "id" ZAC posts when creating config types, CAs and auth policies', async () => {
    const ct = await mg('POST', '/config-types', { name: 'zac.v1', id: '', schema: {}, tags: {} });
    expect(ct.status, ct.text).toBe(201);
    expect(ct.body.data.id).not.toBe('');
    const ap = await mg('POST', '/auth-policies', {
      name: 'zac-policy', id: '',
      primary: { cert: { allowed: false, allowExpiredCerts: false }, extJwt: { allowed: false, allowedSigners: [] }, updb: { allowed: false, lockoutDurationMinutes: 0, maxAttempts: 5, minPasswordLength: 5, requireMixedCase: false, requireNumberChar: false, requireSpecialChar: false } },
      secondary: { requireTotp: false }, tags: {},
    });
    expect(ap.status, ap.text).toBe(201);
    const ca = await mg('POST', '/cas', { name: 'zac-ca', id: '', isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: false, identityRoles: [], identityNameFormat: '', isAuthEnabled: false, certPem: '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n', tags: {} });
    // Past the body's shape, to the certificate check.
    expect(ca.status).toBe(400);
    expect(ca.body.error.cause?.field ?? ca.body.error.message).toMatch(/certPem/);
  });

  it('saves a CA from ZAC\'s edit form, which sends its id and certificate back (upstream\'s caUpdate has neither)', async () => {
    const ca = new TestCa('zac-ca');
    const body = { name: 'zac-ca', isAutoCaEnrollmentEnabled: false, isOttCaEnrollmentEnabled: false, identityRoles: [], identityNameFormat: '', isAuthEnabled: false, certPem: ca.pem, tags: {} };
    const made = await mg('POST', '/cas', { ...body, id: '' });
    expect(made.status, made.text).toBe(201);
    const id = made.body.data.id;
    const saved = await mg('PUT', `/cas/${id}`, { ...body, id, name: 'zac-ca-2', identityNameFormat: '[caName]-[commonName]' });
    expect(saved.status, saved.text).toBe(200);
    expect((await mg('GET', `/cas/${id}`)).body.data).toMatchObject({ name: 'zac-ca-2', certPem: ca.pem });
  });

  it('keeps a config\'s type when ZAC\'s edit form sends configTypeId back', async () => {
    const made = await mg('POST', '/configs', { name: 'zac-host', configTypeId: 'NH5p4FpGR', data: { protocol: 'tcp', address: 'a', port: 1 } });
    const id = made.body.data.id;
    const patched = await mg('PATCH', `/configs/${id}`, { name: 'zac-host', data: { protocol: 'tcp', address: 'b', port: 2 }, configTypeId: 'g7cIWbcGg', tags: {} });
    expect(patched.status, patched.text).toBe(200);
    expect((await mg('GET', `/configs/${id}`)).body.data).toMatchObject({ configTypeId: 'NH5p4FpGR', data: { address: 'b', port: 2 } });
  });

  it('creates a JWT signer from ZAC\'s form, which sends newer controllers\' enrolment fields', async () => {
    const r = await mg('POST', '/external-jwt-signers', { name: 'zac-jwt', audience: 'ztc', issuer: 'https://issuer.example/zac', clientId: '', claimsProperty: '', enabled: true, useExternalId: false, externalAuthUrl: '', kid: '', scopes: [], jwksEndpoint: 'https://issuer.example/jwks', tags: {}, enrollToCertEnabled: false, enrollToTokenEnabled: false });
    expect(r.status, r.text).toBe(201);
    const got = (await mg('GET', `/external-jwt-signers/${r.body.data.id}`)).body.data;
    expect(got).toMatchObject({ name: 'zac-jwt', issuer: 'https://issuer.example/zac', jwksEndpoint: 'https://issuer.example/jwks' });
    expect(got).toMatchObject({ enrollToCertEnabled: false, enrollToTokenEnabled: false, targetToken: 'ACCESS' });
  });

  it('creates a posture check from ZAC\'s form, which sends every type\'s fields, the other types\' empty', async () => {
    const body = (typeId: string, own: Record<string, unknown>) => ({
      name: `zac-${typeId.toLowerCase()}`, typeId, semantic: 'AllOf', roleAttributes: [], domains: [], macAddresses: [], operatingSystems: [],
      processes: [{ hashes: [], osType: '', path: '', signerFingerprints: [] }], process: { hashes: [], osType: '', path: '', signerFingerprint: '' },
      promptOnWake: false, promptOnUnlock: false, timeoutSeconds: 0, tags: {}, ...own,
    });
    const mfa = await mg('POST', '/posture-checks', body('MFA', {}));
    expect(mfa.status, mfa.text).toBe(201);
    const read = (await mg('GET', `/posture-checks/${mfa.body.data.id}`)).body.data;
    expect(read).toMatchObject({ typeId: 'MFA', timeoutSeconds: 0, promptOnWake: false });
    expect(read.domains).toBeUndefined();
    const domain = await mg('POST', '/posture-checks', body('DOMAIN', { domains: ['corp.example'] }));
    expect(domain.status, domain.text).toBe(201);
    expect((await mg('GET', `/posture-checks/${domain.body.data.id}`)).body.data.domains).toEqual(['corp.example']);
    // The check's own fields keep their rules: a domain check with no domains is refused.
    const empty = await mg('POST', '/posture-checks', body('DOMAIN', { name: 'zac-no-domains' }));
    expect(empty.status).toBe(400);
    expect(empty.body.error.cause.field).toBe('domains');
    expect((await mg('PATCH', `/posture-checks/${mfa.body.data.id}`, body('MFA', { timeoutSeconds: 300 }))).status).toBe(200);
  });
});
