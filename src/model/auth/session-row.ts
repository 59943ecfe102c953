// An API session's row with its identity's fields, and how a statement that reads something else selects
// them beside it (the request's session and its answer in one query): what api-sessions.ts and the hot
// reads (changes.ts, the current identity, a client's service by name) share.
import type { ApiSessionRow } from '../../store/schema.js';

export interface SessionWithIdentity extends ApiSessionRow {
  identityName: string;
  isAdmin: number;
  permissions: string;
  disabled: number;
  disabledUntil: string | null;
}

// The API session's own columns and its identity's, each under a `session` prefix, for a statement that
// reads something else with the session by its token hash (one wait on PostgreSQL instead of two): the
// current identity, a client's service by name, the service-updates poll.
const SESSION_COLUMNS = ['id', 'createdAt', 'updatedAt', 'tags', 'tokenHash', 'tokenSealed', 'identityId', 'authenticatorId', 'ipAddress', 'configTypes', 'isMfaRequired', 'isMfaComplete', 'isCertExtendable', 'lastActivityAt', 'expiresAt', 'extJwtPending'] as const;
export const IDENTITY_COLUMNS = { identityName: 'name', isAdmin: 'isAdmin', permissions: 'permissions', disabled: 'disabled', disabledUntil: 'disabledUntil' } as const;
const prefixed = (c: string) => `session${c[0].toUpperCase()}${c.slice(1)}`;

/** The session's columns to select beside another row (`alias`: the session's); with its identity's when `identity` names that. */
export function sessionColumns(alias: string, identity?: string): string[] {
  const own = SESSION_COLUMNS.map((c) => `${alias}.${c} as ${prefixed(c)}`);
  return identity ? [...own, ...Object.entries(IDENTITY_COLUMNS).map(([as, c]) => `${identity}.${c} as ${prefixed(as)}`)] : own;
}

/**
 * Takes the session's columns (see sessionColumns) out of a row that has them. Its identity's fields
 * are the row's own when the row is that identity, as the current-identity read is.
 */
export function takeSession(r: Record<string, unknown>, identityIsRow = false): SessionWithIdentity {
  const s: Record<string, unknown> = {};
  for (const c of SESSION_COLUMNS) {
    s[c] = r[prefixed(c)];
    delete r[prefixed(c)];
  }
  for (const [as, c] of Object.entries(IDENTITY_COLUMNS)) {
    s[as] = identityIsRow ? r[c] : r[prefixed(as)];
    if (!identityIsRow) delete r[prefixed(as)];
  }
  return s as unknown as SessionWithIdentity;
}
