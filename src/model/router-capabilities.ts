// Router capabilities as the 2.x edge API names them (enum routerCapabilities): the bit a router sets in
// its capability mask (hello header 1002 on the control channel, the same bits on the edge channel to
// SDKs), and the name REST shows for it. Upstream 2.1's routerCapabilityBitNames
// (controller/internal/routes/edge_router_router.go, common/capabilities/consts.go); bits without a name
// (3 is reserved, RouterDataModel is -2, i.e. bit 62) are left out of the names, not shown as numbers.
export const ROUTER_CAPABILITIES: readonly (readonly [bit: number, name: string])[] = [
  [1, 'MULTI_CHANNEL'],
  [2, 'CONNECT_V2'],
  [4, 'SERVICE_SUBSCRIPTIONS'],
  [5, 'POSTURE_CHECKS'],
  [6, 'BIND_SUCCESS'],
];

/** Every router capability the API can name, by bit: GET /enumerated-router-capabilities. */
export const ENUMERATED_ROUTER_CAPABILITIES = ROUTER_CAPABILITIES.map(([, name]) => name);

/** A stored mask (an int64 as a number, a decimal string or a bigint) as its capability names; [] when none. */
export function routerCapabilityNames(mask: number | string | bigint | null | undefined): string[] {
  if (mask === null || mask === undefined || mask === '') return [];
  let m: bigint;
  try {
    m = BigInt(mask);
  } catch {
    return [];
  }
  return ROUTER_CAPABILITIES.filter(([bit]) => (m >> BigInt(bit)) & 1n).map(([, name]) => name);
}
