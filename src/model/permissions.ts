// Permissions an identity can hold beside isAdmin, named as upstream 2.x names them. Only the one ztc
// enforces is accepted: a permission that was stored but not enforced would promise what it does not do.
import { Type } from 'typebox';
import { fromJson } from '../store/json.js';

/** Reads everything an admin reads (both APIs, every list and detail, /metrics) and changes nothing. */
export const ADMIN_READONLY = 'admin_readonly';

export const Permissions = Type.Array(Type.Union([Type.Literal(ADMIN_READONLY)]), {
  maxItems: 16,
  description: `Permissions beside isAdmin: '${ADMIN_READONLY}' reads everything an admin can and changes nothing`,
});

export const hasPermission = (permissionsJson: string | null | undefined, name: string) => fromJson<string[]>(permissionsJson, []).includes(name);

/** Methods that only read: the ones a read-only admin may call on admin routes. */
export const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);
