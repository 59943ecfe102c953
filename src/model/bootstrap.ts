// First start: the rows every controller needs. Each insert is idempotent (ON CONFLICT DO NOTHING), so
// a second start, or two controllers starting at once on one PostgreSQL database, changes nothing.
import { randomBytes } from 'node:crypto';
import { evaluateEntity } from './policy/membership.js';
import { hashPassword } from './auth/password.js';
import { iso } from './clock.js';
import type { Ctx } from './context.js';
import { newId } from './ids.js';
import { collecting, publish, recordRowChange } from './events/record.js';
import type { ZtcEvent } from './events/types.js';
import { BUILTIN_CONFIG_TYPE_IDS, BUILTIN_CONFIG_TYPES, isEarlySeed } from './config-schemas.js';
import { IDENTITY_TYPES } from './resources/identity-types.js';
import { DEFAULT_AUTH_POLICY_ID } from './resources/identities.js';

export const DEFAULT_AUTH_POLICY = {
  primary: {
    // Upstream allows expired certificates by default; we refuse them unless a policy says otherwise.
    // As upstream's default policy: an identity whose certificate expired can still log in to extend it.
    cert: { allowed: true, allowExpiredCerts: true },
    updb: { allowed: true, minPasswordLength: 5, requireSpecialChar: false, requireNumberChar: false, requireMixedCase: false, maxAttempts: 0, lockoutDurationMinutes: 0 },
    extJwt: { allowed: true, allowedSigners: [] as string[] },
  },
  secondary: { requireTotp: false, requireExtJwtSigner: null as string | null },
};

export interface BootstrapResult {
  adminCreated: boolean;
  /** Set only when the password was generated here: shown once, never stored in clear. */
  generatedPassword?: string;
}

export async function bootstrap(ctx: Ctx): Promise<BootstrapResult> {
  const db = ctx.store.db;
  const now = iso(ctx.clock.now());
  const base = { createdAt: now, updatedAt: now, tags: '{}' };
  for (const name of IDENTITY_TYPES) {
    await db.insertInto('identityTypes').values({ id: name, name, ...base }).onConflict((oc) => oc.doNothing()).execute();
  }
  await db
    .insertInto('authPolicies')
    .values({
      id: DEFAULT_AUTH_POLICY_ID,
      name: 'Default',
      primaryJson: JSON.stringify(DEFAULT_AUTH_POLICY.primary),
      secondaryJson: JSON.stringify(DEFAULT_AUTH_POLICY.secondary),
      isSystem: 1,
      ...base,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();

  for (const [name, schema] of Object.entries(BUILTIN_CONFIG_TYPES)) {
    const id = BUILTIN_CONFIG_TYPE_IDS[name]!;
    await db.insertInto('configTypes').values({ id, name, schema: JSON.stringify(schema), target: 'service', ...base }).onConflict((oc) => oc.doNothing()).execute();
    // A database from before the schemas matched upstream's: the built-in gets the full schema. Configs
    // already stored stay as they are (only writes validate), as upstream keeps configs its schema would refuse.
    const stored = await db.selectFrom('configTypes').select('schema').where('id', '=', id).executeTakeFirst();
    if (stored && isEarlySeed(name, stored.schema)) {
      await db.updateTable('configTypes').set({ schema: JSON.stringify(schema), updatedAt: now }).where('id', '=', id).where('schema', '=', stored.schema).execute();
    }
  }

  await sealLegacySecrets(ctx);
  for (const name of ['services', 'access', 'policy-membership']) {
    await db.insertInto('changeMarkers').values({ name, changedAt: now }).onConflict((oc) => oc.doNothing()).execute();
  }

  const admin = await db.selectFrom('identities').select('id').where('isDefaultAdmin', '=', 1).executeTakeFirst();
  if (admin) return { adminCreated: false };

  const generated = ctx.config.adminPassword ? undefined : randomBytes(12).toString('base64url');
  const password = ctx.config.adminPassword || generated!;
  if (ctx.config.adminUsername.length < 4) throw new Error('the admin username must have at least 4 characters');
  if (password.length < 5 || password.length > 100) throw new Error('the admin password must have 5 to 100 characters');
  const passwordHash = await hashPassword(password);
  const id = newId();
  // The first admin is in the audit from the start, created by the controller itself.
  const events: ZtcEvent[] = [];
  try {
    await db.transaction().execute(async (raw) => {
    const tx = collecting(raw, events);
    const identity = { id, name: 'Default Admin', typeId: 'Default', authPolicyId: DEFAULT_AUTH_POLICY_ID, isAdmin: 1, isDefaultAdmin: 1, ...base };
    await tx.insertInto('identities').values(identity as never).execute();
    const authenticator = { id: newId(), identityId: id, method: 'updb', username: ctx.config.adminUsername, passwordHash, isIssuedByNetwork: 0, ...base };
    await tx.insertInto('authenticators').values(authenticator as never).execute();
    // Policies naming #all select the admin too.
    await evaluateEntity(tx, 'identity', id, []);
    await recordRowChange(tx, ctx, 'identities', 'created', id, null, identity);
    await recordRowChange(tx, ctx, 'authenticators', 'created', authenticator.id, null, authenticator);
    });
    publish(ctx, events);
  } catch (err) {
    // Another controller on the same database created it first.
    if (ctx.store.dialect.uniqueViolation(err)) return { adminCreated: false };
    throw err;
  }
  return { adminCreated: true, generatedPassword: generated };
}

/** Secrets written before they were sealed at rest (databases from earlier versions) are sealed now. */
async function sealLegacySecrets(ctx: Ctx) {
  const { db } = ctx.store;
  const s = ctx.sealer;
  for (const m of await db.selectFrom('mfa').select(['id', 'secret', 'recoveryCodes']).execute()) {
    if (s.isSealed(m.secret) && s.isSealed(m.recoveryCodes)) continue;
    await db.updateTable('mfa').set({ secret: s.seal(s.open(m.secret)), recoveryCodes: s.seal(s.open(m.recoveryCodes)) }).where('id', '=', m.id).where('secret', '=', m.secret).execute();
  }
  for (const e of await db.selectFrom('enrollments').select(['id', 'jwt']).execute()) {
    if (!s.isSealed(e.jwt)) await db.updateTable('enrollments').set({ jwt: s.seal(e.jwt) }).where('id', '=', e.id).where('jwt', '=', e.jwt).execute();
  }
}
