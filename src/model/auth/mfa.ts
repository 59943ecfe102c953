// TOTP MFA (SHA-1, 6 digits, 30 s steps, +-2 steps tolerance, as upstream) with recovery codes.
// A code is accepted once: the last accepted time step is stored and moved forward atomically.
import { randomBytes } from 'node:crypto';
import { generateSecret, generateURI, verify } from 'otplib';
import { iso } from '../clock.js';
import { recordMfaPassed } from '../posture/evaluate.js';
import type { Ctx } from '../context.js';
import { ApiError } from '../errors.js';
import { deleteApiSession } from './api-sessions.js';
import { apiSessionEnded } from '../events/emit.js';
import { recordRowChange } from '../events/record.js';
import { REDACTED } from '../events/redact.js';
import { writeTx } from '../crud.js';
import { failOnSession, forgetSession, MAX_PARTIAL_FAILURES, mfaBudget } from './mfa-budget.js';
import { newId, safeEqual } from '../ids.js';
import { selfLink } from '../resource.js';
import { fromJson, isSet } from '../../store/json.js';
import type { MfaRow } from '../../store/schema.js';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const TOLERANCE_SECONDS = 60;

export const mfaNotFound = () => new ApiError(404, 'MFA_NOT_ENROLLED', 'MFA is not enrolled for this identity: start with POST /current-identity/mfa');
export const invalidCode = (status = 401) => new ApiError(status, 'MFA_INVALID_TOKEN', 'The MFA code is not valid (or was already used)');

function recoveryCodes(): string[] {
  return Array.from({ length: 20 }, () => [...randomBytes(6)].map((b) => BASE32[b & 31]).join(''));
}

/** The identity's MFA row with its secret and recovery codes opened (storedRecoveryCodes: as stored). */
export async function getMfa(ctx: Ctx, identityId: string): Promise<(MfaRow & { storedRecoveryCodes: string }) | undefined> {
  const row = await ctx.store.db.selectFrom('mfa').selectAll().where('identityId', '=', identityId).executeTakeFirst();
  if (!row) return undefined;
  return { ...row, secret: ctx.sealer.open(row.secret), recoveryCodes: ctx.sealer.open(row.recoveryCodes), storedRecoveryCodes: row.recoveryCodes };
}

const sealCodes = (ctx: Ctx, codes: string[]) => ctx.sealer.seal(JSON.stringify(codes));

/** The issuer shown in authenticator apps: the controller's host name. */
const issuer = (ctx: Ctx) => ctx.config.hostnames[0] ?? 'ztc';

export function provisioningUrl(ctx: Ctx, identityName: string, secret: string) {
  return generateURI({ issuer: issuer(ctx), label: identityName, secret });
}

export async function startMfa(ctx: Ctx, identityId: string) {
  const existing = await getMfa(ctx, identityId);
  if (existing) throw new ApiError(409, 'ALREADY_MFA_ENROLLED', isSet(existing.isVerified) ? 'MFA is already enrolled' : 'An MFA enrollment is already started: verify it, or delete it and start again');
  const now = iso(ctx.clock.now());
  const id = newId();
  const row = { id, createdAt: now, updatedAt: now, tags: '{}', identityId, secret: ctx.sealer.seal(generateSecret({ length: 20 })), isVerified: 0, recoveryCodes: sealCodes(ctx, recoveryCodes()), lastStep: 0 };
  try {
    await writeTx(ctx, async (tx) => {
      await tx.insertInto('mfa').values(row).execute();
      await recordRowChange(tx, ctx, 'mfas', 'created', id, null, row);
    });
  } catch (err) {
    // writeTx reports a unique violation as COULD_NOT_VALIDATE: here it means a concurrent start.
    if (ctx.store.dialect.uniqueViolation(err) || (err instanceof ApiError && err.code === 'COULD_NOT_VALIDATE')) throw new ApiError(409, 'ALREADY_MFA_ENROLLED', 'An MFA enrollment is already started');
    throw err;
  }
  return id;
}

/** As upstream: what to do next with the enrollment (verify it and read its QR code, or its recovery codes). */
function mfaLinks(verified: boolean) {
  const at = (p: string) => ({ href: `./current-identity/mfa${p}` });
  return {
    self: at(''),
    'current-identity': { href: './current-identity' },
    ...(verified ? { 'recovery-codes': at('/recovery-codes') } : { verify: at('/verify'), qr: at('/qr-code') }),
  };
}

export function mfaDetail(ctx: Ctx, m: MfaRow, identityName: string) {
  const verified = isSet(m.isVerified);
  return {
    id: m.id, _links: mfaLinks(verified), createdAt: m.createdAt, updatedAt: m.updatedAt, tags: fromJson(m.tags, {}),
    isVerified: verified,
    // The secret and the recovery codes are shown only while enrollment is pending.
    provisioningUrl: verified ? '' : provisioningUrl(ctx, identityName, m.secret),
    recoveryCodes: verified ? [] : fromJson<string[]>(m.recoveryCodes, []),
  };
}

export async function qrCodePng(ctx: Ctx, m: MfaRow, identityName: string): Promise<Buffer> {
  // Loaded here: qrcode and its PNG encoder took ~11 ms of every local-mode command's start.
  const { default: QRCode } = await import('qrcode');
  return QRCode.toBuffer(provisioningUrl(ctx, identityName, m.secret), { type: 'png', margin: 2, width: 256 });
}

/** Accept a TOTP code once: its time step must be later than the last accepted one. */
async function acceptTotp(ctx: Ctx, m: MfaRow, code: string): Promise<boolean> {
  if (!/^\d{6}$/.test(code)) return false;
  const result = await verify({ secret: m.secret, token: code, epoch: Math.floor(ctx.clock.now().getTime() / 1000), epochTolerance: TOLERANCE_SECONDS }).catch(() => ({ valid: false }) as const);
  if (!result.valid || !('timeStep' in result)) return false;
  const step = Number(result.timeStep);
  const res = await ctx.store.db.updateTable('mfa').set({ lastStep: step }).where('id', '=', m.id).where('lastStep', '<', step).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Accept a recovery code once: it is removed in the same statement that checks it is still there. */
async function acceptRecoveryCode(ctx: Ctx, m: MfaRow & { storedRecoveryCodes: string }, code: string): Promise<boolean> {
  const codes = fromJson<string[]>(m.recoveryCodes, []);
  const match = codes.find((c) => safeEqual(c, code.toUpperCase()));
  if (!match) return false;
  // A recovery code spent is a change an operator wants in the audit (a lost device, or a stolen code).
  return writeTx(ctx, async (tx) => {
    const changed = { recoveryCodes: sealCodes(ctx, codes.filter((c) => c !== match)), updatedAt: iso(ctx.clock.now()) };
    const res = await tx.updateTable('mfa').set(changed).where('id', '=', m.id).where('recoveryCodes', '=', m.storedRecoveryCodes).executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    await recordRowChange(tx, ctx, 'mfas', 'updated', m.id, storedMfa(m), { ...storedMfa(m), ...changed }, 'recovery-code-used');
    return true;
  });
}

/** The row as stored (for an event's states: its secrets are redacted there anyway). */
const storedMfa = (m: MfaRow & { storedRecoveryCodes: string }): Record<string, unknown> => {
  const { storedRecoveryCodes, ...row } = m;
  return { ...row, secret: REDACTED, recoveryCodes: storedRecoveryCodes };
};

/**
 * A current TOTP code, or (when allowed) a recovery code. Every check spends one attempt of the identity's
 * budget (mfa-budget.ts), taken before the check so concurrent guesses cannot slip past it; a right code
 * gives the budget back. Over budget: 429 before anything is checked.
 */
export async function checkCode(ctx: Ctx, m: MfaRow & { storedRecoveryCodes: string }, code: unknown, o: { recovery: boolean }): Promise<boolean> {
  const budget = mfaBudget(ctx);
  budget.take(m.identityId);
  const ok = await checkCodeOnce(ctx, m, code, o);
  if (ok) budget.succeeded(m.identityId);
  return ok;
}

async function checkCodeOnce(ctx: Ctx, m: MfaRow & { storedRecoveryCodes: string }, code: unknown, o: { recovery: boolean }): Promise<boolean> {
  if (typeof code !== 'string' || !code) return false;
  if (await acceptTotp(ctx, m, code)) return true;
  return o.recovery && isSet(m.isVerified) && acceptRecoveryCode(ctx, m, code);
}

export async function verifyMfa(ctx: Ctx, identityId: string, apiSessionId: string | undefined, code: unknown) {
  const m = await getMfa(ctx, identityId);
  if (!m || isSet(m.isVerified)) throw mfaNotFound();
  if (!(await checkCode(ctx, m, code, { recovery: false }))) throw invalidCode(400);
  await writeTx(ctx, async (tx) => {
    const changed = { isVerified: 1, updatedAt: iso(ctx.clock.now()) };
    await tx.updateTable('mfa').set(changed).where('id', '=', m.id).execute();
    await recordRowChange(tx, ctx, 'mfas', 'updated', m.id, storedMfa(m), { ...storedMfa(m), ...changed }, 'verify');
  });
  // The session on which enrollment is verified has done its MFA.
  if (apiSessionId) {
    await ctx.store.db.updateTable('apiSessions').set({ isMfaComplete: 1 }).where('id', '=', apiSessionId).execute();
    await recordMfaPassed(ctx, apiSessionId, identityId);
  }
}

export async function completeMfaLogin(ctx: Ctx, identityId: string, apiSessionId: string, code: unknown) {
  const m = await getMfa(ctx, identityId);
  if (!m || !isSet(m.isVerified)) throw new ApiError(401, 'MFA_NOT_ENROLLED', 'This identity has no verified MFA: enroll it first (POST /current-identity/mfa)');
  if (!(await checkCode(ctx, m, code, { recovery: true }))) {
    if (failOnSession(ctx, apiSessionId) >= MAX_PARTIAL_FAILURES) {
      forgetSession(ctx, apiSessionId);
      await deleteApiSession(ctx, apiSessionId, 'mfa-failed');
      apiSessionEnded(ctx, { id: apiSessionId, identityId }, 'mfa-failed');
      throw new ApiError(401, 'MFA_INVALID_TOKEN', `The MFA code is not valid, and this login has had ${MAX_PARTIAL_FAILURES} wrong codes: it has ended, log in again`);
    }
    throw invalidCode();
  }
  forgetSession(ctx, apiSessionId);
  await ctx.store.db.updateTable('apiSessions').set({ isMfaComplete: 1 }).where('id', '=', apiSessionId).execute();
  await recordMfaPassed(ctx, apiSessionId, identityId);
}

/** Disable: a current code once verified; while unverified, the code must be empty. */
export async function deleteMfa(ctx: Ctx, identityId: string, code: string | undefined) {
  const m = await getMfa(ctx, identityId);
  if (!m) throw mfaNotFound();
  if (isSet(m.isVerified) && !(await checkCode(ctx, m, code, { recovery: true }))) throw invalidCode();
  await writeTx(ctx, async (tx) => {
    const res = await tx.deleteFrom('mfa').where('id', '=', m.id).executeTakeFirst();
    if (Number(res.numDeletedRows) === 1) await recordRowChange(tx, ctx, 'mfas', 'deleted', m.id, storedMfa(m), null);
  });
}

export async function recoveryCodesOf(ctx: Ctx, identityId: string, code: unknown) {
  const m = await getMfa(ctx, identityId);
  if (!m || !isSet(m.isVerified)) throw mfaNotFound();
  if (!(await checkCode(ctx, m, code, { recovery: false }))) throw invalidCode();
  const fresh = await getMfa(ctx, identityId);
  return { id: m.id, _links: selfLink('current-identity/mfa/recovery-codes', m.id), createdAt: m.createdAt, updatedAt: m.updatedAt, tags: {}, recoveryCodes: fromJson<string[]>(fresh!.recoveryCodes, []) };
}

export async function regenerateRecoveryCodes(ctx: Ctx, identityId: string, code: unknown) {
  const m = await getMfa(ctx, identityId);
  if (!m || !isSet(m.isVerified)) throw mfaNotFound();
  if (!(await checkCode(ctx, m, code, { recovery: false }))) throw invalidCode();
  await writeTx(ctx, async (tx) => {
    const changed = { recoveryCodes: sealCodes(ctx, recoveryCodes()), updatedAt: iso(ctx.clock.now()) };
    await tx.updateTable('mfa').set(changed).where('id', '=', m.id).execute();
    await recordRowChange(tx, ctx, 'mfas', 'updated', m.id, storedMfa(m), { ...storedMfa(m), ...changed }, 'regenerate-recovery-codes');
  });
}

