// Router identities (upstream 1.x): a tunneler-enabled edge router has an identity of type Router named
// as the router, which only the router's own writes (a context with `system`) may rename or delete. The
// router's system edge router policy (`edge-router-<router id>-system`, identityRoles ["@<identity id>"])
// is what links the two.
import type { Tx } from '../../store/db.js';
import type { Ctx } from '../context.js';
import { ApiError, couldNotValidate } from '../errors.js';
import type { Row } from '../resource.js';

/** The system policy that names this identity, if a router's. */
async function routerPolicyOf(tx: Tx, identityId: string) {
  return tx
    .selectFrom('edgeRouterPolicies')
    .select(['id', 'name'])
    .where('isSystem', '=', 1)
    .where('identityRoles', '=', JSON.stringify([`@${identityId}`]))
    .where('name', 'like', 'edge-router-%-system')
    .executeTakeFirst();
}

/** A Router identity goes with its router, as upstream refuses it (400 ENTITY_CAN_NOT_BE_DELETED). */
export async function checkRouterIdentityDelete(tx: Tx, existing: Row, ctx: Ctx) {
  if (existing.typeId !== 'Router' || ctx.system) return;
  if (await routerPolicyOf(tx, existing.id as string)) {
    throw new ApiError(400, 'ENTITY_CAN_NOT_BE_DELETED', `cannot delete router identity ${existing.name} until associated router is deleted`);
  }
}

/** Its name follows the router's, as upstream: renamed only through the router. */
export function checkRouterIdentityRename(existing: Row | undefined, input: Row, ctx: Ctx) {
  if (!existing || existing.typeId !== 'Router' || ctx.system) return;
  if ('name' in input && input.name !== existing.name) throw couldNotValidate('name', 'may not change name of router identities', input.name);
}
