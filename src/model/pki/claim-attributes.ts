// Role attributes from certificate claims (ztc's, for ziti#827): a CA's rules (roleAttributeClaims) turn
// claims of the certificates it issued into role attributes of the identities that log in with them,
// kept in step at each login: the attributes the rules gave before and no longer give are removed, those
// an admin set are never touched (identities.claim_role_attributes keeps which came from the rules).
import type { X509Certificate } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { Ctx } from '../context.js';
import { updateIn, writeTx } from '../crud.js';
import { lockRow } from '../set-edits.js';
import { invalidField } from '../errors.js';
import { fromJson } from '../../store/json.js';

export const CLAIM_SOURCES = ['SAN_URI', 'SAN_EMAIL', 'SAN_DNS', 'SUBJECT'] as const;

/** One rule: where to look, a regular expression to match, and the attribute to make of a match. */
export const ClaimRule = Type.Object(
  {
    source: Type.Union(CLAIM_SOURCES.map((s) => Type.Literal(s)), { description: 'SAN_URI (e.g. SPIFFE ids), SAN_EMAIL, SAN_DNS, or SUBJECT (with field)' }),
    field: Type.Optional(Type.String({ minLength: 1, maxLength: 32, description: 'for SUBJECT: the subject field, e.g. OU, O, CN, L, ST, C' })),
    pattern: Type.String({ minLength: 1, maxLength: 512, description: 'a regular expression (JavaScript syntax) each value of the source is matched against' }),
    attribute: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'the role attribute a match gives: $1, $2... are its groups, $& the whole match; default $1 when the pattern has a group, else $&' })),
  },
  { additionalProperties: false },
);
export type ClaimRuleT = Static<typeof ClaimRule>;
export const ClaimRules = Type.Array(ClaimRule, {
  maxItems: 50,
  description: "ztc's (ziti#827): rules that turn claims of the certificates this CA issued into role attributes of the identities logging in with them, kept in step at each login",
});

/** Refuses a rule whose pattern does not compile or a SUBJECT rule without a field (400 naming it). */
export function checkClaimRules(rules: ClaimRuleT[]) {
  rules.forEach((r, i) => {
    try {
      new RegExp(r.pattern);
    } catch (e) {
      throw invalidField(`roleAttributeClaims[${i}].pattern`, `not a regular expression: ${(e as Error).message}`, r.pattern);
    }
    if (r.source === 'SUBJECT' && !r.field) throw invalidField(`roleAttributeClaims[${i}].field`, 'a SUBJECT rule names the subject field (OU, O, CN...)');
  });
}

/** Node's subjectAltName: `URI:a, DNS:b, email:c`, a value with special characters JSON-quoted. */
function sans(cert: X509Certificate): { type: string; value: string }[] {
  const text = cert.subjectAltName ?? '';
  const out: { type: string; value: string }[] = [];
  const re = /(?:^|, )([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    let value = m[2];
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value) as string;
      } catch {
        /* kept as it is */
      }
    }
    out.push({ type: m[1], value });
  }
  return out;
}

/** The values of one subject field (several OUs are several values). */
function subjectValues(cert: X509Certificate, field: string): string[] {
  return cert.subject
    .split('\n')
    .map((line) => /^([^=]+)=(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => !!m && m[1].toLowerCase() === field.toLowerCase())
    .map((m) => m[2]);
}

/** What the rules make of the certificate's claims: a set of role attributes. */
export function attributesFromClaims(rules: ClaimRuleT[], cert: X509Certificate): Set<string> {
  const out = new Set<string>();
  const alt = sans(cert);
  for (const rule of rules) {
    const values =
      rule.source === 'SUBJECT' ? subjectValues(cert, rule.field ?? '') : alt.filter((s) => s.type === { SAN_URI: 'URI', SAN_EMAIL: 'email', SAN_DNS: 'DNS' }[rule.source]).map((s) => s.value);
    let re: RegExp;
    try {
      re = new RegExp(rule.pattern);
    } catch {
      continue;
    }
    for (const v of values) {
      const m = re.exec(v);
      if (!m) continue;
      const template = rule.attribute ?? (m.length > 1 ? '$1' : '$&');
      const attr = template.replace(/\$(&|\d+)/g, (_, g: string) => (g === '&' ? m[0] : (m[Number(g)] ?? ''))).trim();
      if (attr && attr.length <= 255) out.add(attr);
    }
  }
  return out;
}

/**
 * At a certificate login: the identity's role attributes as the CA's rules make them of this certificate.
 * Adds what the rules give that it lacks, removes what they gave before and no longer give, leaves what an
 * admin set; writes nothing when nothing changes. The write is the identity's patch (its policies
 * re-evaluated, access taken away ending live circuits), in one transaction with what the rules own.
 */
export async function syncClaimAttributes(ctx: Ctx, identityId: string, rulesJson: string | null | undefined, cert: X509Certificate) {
  const rules = fromJson<ClaimRuleT[]>(rulesJson, []);
  const identity = await ctx.store.db.selectFrom('identities').select(['roleAttributes', 'claimRoleAttributes']).where('id', '=', identityId).executeTakeFirst();
  if (!identity) return;
  const owned = new Set(fromJson<string[]>(identity.claimRoleAttributes, []));
  if (!rules.length && !owned.size) return;
  const given = attributesFromClaims(rules, cert);
  const { identities } = await import('../resources/identities.js');
  await writeTx(ctx, async (tx) => {
    await lockRow(tx, ctx.store.dialect.name, 'identities', identityId);
    const row = await tx.selectFrom('identities').select(['roleAttributes', 'claimRoleAttributes']).where('id', '=', identityId).executeTakeFirst();
    if (!row) return;
    const current = new Set(fromJson<string[]>(row.roleAttributes, []));
    const before = new Set(fromJson<string[]>(row.claimRoleAttributes, []));
    const removed = [...before].filter((a) => !given.has(a));
    const added = [...given].filter((a) => !current.has(a));
    const nowOwned = [...new Set([...[...before].filter((a) => given.has(a)), ...added])].sort();
    if (removed.length || added.length) {
      const next = [...[...current].filter((a) => !removed.includes(a)), ...added];
      await updateIn(tx, ctx, identities, identityId, { roleAttributes: next }, 'patch');
    }
    if (JSON.stringify(nowOwned) !== JSON.stringify([...before].sort())) await tx.updateTable('identities').set({ claimRoleAttributes: JSON.stringify(nowOwned) }).where('id', '=', identityId).execute();
  });
}
