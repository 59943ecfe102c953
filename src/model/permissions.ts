// Permissions an identity can hold beside isAdmin, named as upstream 2.x names them (its "basic
// permission system"): admin_readonly, and per kind of entity the whole of it (`service`) or one action
// (`service.read`, `.create`, `.update`, `.delete`), plus `ops` for the operational endpoints. Each is
// enforced on the Management API's admin routes (server/plugins/auth.ts): a permission that was stored
// but not enforced would promise what it does not do.
import { Type } from 'typebox';
import { fromJson } from '../store/json.js';

/** Reads everything an admin reads (both APIs, every list and detail, /metrics) and changes nothing. */
export const ADMIN_READONLY = 'admin_readonly';

/** The kinds of entity a permission can name, as upstream names them. */
export const PERMISSION_ENTITIES = [
  'auth-policy', 'ca', 'config', 'config-type', 'edge-router-policy', 'enrollment', 'external-jwt-signer', 'identity',
  'posture-check', 'router', 'service', 'service-edge-router-policy', 'service-policy', 'terminator',
] as const;
const ACTIONS = ['read', 'create', 'update', 'delete'] as const;
const OPS_ACTIONS = ['read', 'update', 'delete'] as const;

/** Every permission name upstream 2.x defines. */
export const PERMISSION_NAMES: string[] = [
  ADMIN_READONLY,
  ...PERMISSION_ENTITIES.flatMap((e) => [e, ...ACTIONS.map((a) => `${e}.${a}`)]),
  'ops',
  ...OPS_ACTIONS.map((a) => `ops.${a}`),
];

export const Permissions = Type.Array(Type.Union(PERMISSION_NAMES.map((n) => Type.Literal(n))), {
  maxItems: 64,
  description: `Permissions beside isAdmin: '${ADMIN_READONLY}' reads everything an admin can and changes nothing; 'service' (or 'identity', 'config', ...) every operation on that kind of entity, 'service.read' (or .create, .update, .delete) one of them; 'ops' the operational endpoints`,
});

/** The entity a Management API path is about, by its first segment (its lists of related entities are reads of it). */
const ENTITY_OF_SEGMENT: Record<string, string> = {
  'auth-policies': 'auth-policy', cas: 'ca', configs: 'config', 'config-types': 'config-type',
  'edge-router-policies': 'edge-router-policy', enrollments: 'enrollment', 'external-jwt-signers': 'external-jwt-signer',
  identities: 'identity', 'posture-checks': 'posture-check', 'edge-routers': 'router', routers: 'router', 'transit-routers': 'router',
  services: 'service', 'service-edge-router-policies': 'service-edge-router-policy', 'service-policies': 'service-policy', terminators: 'terminator',
  database: 'ops', 'audit-events': 'ops', events: 'ops', summary: 'ops',
};

const ACTION_OF_METHOD: Record<string, string> = { GET: 'read', HEAD: 'read', POST: 'create', PUT: 'update', PATCH: 'update', DELETE: 'delete' };

/**
 * Whether `permissions` allow `method` on the Management API path `path` (`/edge/management/v1/...`):
 * the entity's own permission, or the action's. An action on an entity's sub-path (`/identities/x/disable`)
 * is an update of it; a read stays a read. Nothing outside the Management API is granted this way.
 */
export function permits(permissions: readonly string[], method: string, path: string): boolean {
  if (!permissions.length) return false;
  const m = /^\/edge\/management\/v1\/([^/?]+)(\/[^?]*)?/.exec(path);
  const entity = m && ENTITY_OF_SEGMENT[m[1]];
  if (!entity) return false;
  let action = ACTION_OF_METHOD[method];
  if (!action) return false;
  // POST /identities/{id}/disable and the like change the entity: an update.
  if (action === 'create' && m[2] && m[2].split('/').filter(Boolean).length > 1) action = 'update';
  return permissions.includes(entity) || permissions.includes(`${entity}.${action}`);
}

export const hasPermission = (permissionsJson: string | null | undefined, name: string) => fromJson<string[]>(permissionsJson, []).includes(name);

/** Methods that only read: the ones a read-only admin may call on admin routes. */
export const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);
