// What a tunneler-enabled edge router brings with it, as upstream 1.x makes it: an identity of type
// Router named as the router (the router's tunneler acts as it), and a system edge router policy
// `edge-router-<router id>-system` joining the two. Made when the flag turns on, renamed with the router,
// removed when the flag turns off or the router goes; all in the router's own transaction.
//
// Upstream gives the identity and the policy the router's own id. Here each has its own: tags, role
// attributes and policy membership are indexed by entity id alone (store/entity-index.ts), so a shared
// id would mix the router's entries with the identity's. The policy's identityRoles names the identity.
import type { Tx } from '../../store/db.js';
import { fromJson, isSet } from '../../store/json.js';
import type { Ctx } from '../context.js';
import { createIn, deleteIn, updateIn } from '../crud.js';
import { identities } from './identities.js';
import { edgeRouterPolicies } from './policies.js';

const systemPolicyName = (routerId: string) => `edge-router-${routerId}-system`;

async function routerPolicy(tx: Tx, routerId: string) {
  const row = await tx.selectFrom('edgeRouterPolicies').select(['id', 'identityRoles']).where('name', '=', systemPolicyName(routerId)).where('isSystem', '=', 1).executeTakeFirst();
  if (!row) return undefined;
  const identityId = fromJson<string[]>(row.identityRoles as string, [])[0]?.slice(1);
  return { id: row.id as string, identityId };
}

/** The router's own writes: what the API may not change of its identity and system policy, it may. */
const asRouter = (ctx: Ctx): Ctx => ({ ...ctx, system: true });

/** Bring the router's identity and system policy in line with the router row as it now is. */
export async function syncRouterIdentity(tx: Tx, ctx: Ctx, routerId: string) {
  const router = await tx.selectFrom('routers').select(['id', 'name', 'isEdge', 'isTunnelerEnabled']).where('id', '=', routerId).executeTakeFirst();
  if (!router || !isSet(router.isEdge)) return;
  if (!isSet(router.isTunnelerEnabled)) return removeRouterIdentity(tx, ctx, routerId);
  const policy = await routerPolicy(tx, routerId);
  if (!policy) {
    const { id } = await createIn(tx, ctx, identities, { name: router.name, type: 'Router', isAdmin: false });
    const made = await createIn(tx, ctx, edgeRouterPolicies, { name: systemPolicyName(routerId), semantic: 'AnyOf', identityRoles: [`@${id}`], edgeRouterRoles: [`@${routerId}`] });
    await tx.updateTable('edgeRouterPolicies').set({ isSystem: 1 } as never).where('id', '=', made.id).execute();
    return;
  }
  const identity = policy.identityId ? await tx.selectFrom('identities').select(['id', 'name']).where('id', '=', policy.identityId).executeTakeFirst() : undefined;
  if (identity && identity.name !== router.name) await updateIn(tx, asRouter(ctx), identities, identity.id, { name: router.name }, 'patch');
}

/** The router's system policy and its Router identity go. */
export async function removeRouterIdentity(tx: Tx, ctx: Ctx, routerId: string) {
  const policy = await routerPolicy(tx, routerId);
  if (!policy) return;
  await deleteIn(tx, asRouter(ctx), edgeRouterPolicies, policy.id);
  const identity = policy.identityId ? await tx.selectFrom('identities').select(['id', 'typeId']).where('id', '=', policy.identityId).executeTakeFirst() : undefined;
  if (identity?.typeId === 'Router') await deleteIn(tx, asRouter(ctx), identities, identity.id);
}
