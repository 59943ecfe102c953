// Paths across upstream routers (ctrl-channel-1.1.md sections 2.6 and 4.2): the cheapest chain of links
// from the router a dial arrives at to the router hosting the terminator, and the Route each router on
// it is sent. Pure functions over a snapshot of the network, so the choice can be tested on its own.
import { DestType } from './messages.js';

export interface PathRouter {
  /** The router's own cost (routers.cost); upstream never counts less than MIN_ROUTER_COST. */
  cost: number;
  /** A router that may be a path's end but never carries others' traffic (routers.noTraversal). */
  noTraversal: boolean;
}

export interface PathLink {
  id: string;
  src: string;
  dst: string;
  cost: number;
}

export interface Path {
  /** Router ids, ingress first, egress last. */
  routers: string[];
  /** Link ids: links[i] joins routers[i] and routers[i + 1]. */
  links: string[];
  cost: number;
}

/** Upstream's default minimum router cost (controller/config network options, minRouterCost). */
export const MIN_ROUTER_COST = 10;

/**
 * Single-source cheapest paths (Dijkstra) from `src` over connected routers and their links, usable in
 * both directions as upstream's path finder treats them. Entering a router costs the link's cost plus
 * the router's cost. Returns a function giving the path to any router, or undefined when unreachable.
 */
export function cheapestPaths(src: string, routers: Map<string, PathRouter>, links: Iterable<PathLink>): (dst: string) => Path | undefined {
  const neighbours = new Map<string, { to: string; link: PathLink }[]>();
  for (const l of links) {
    if (!routers.has(l.src) || !routers.has(l.dst) || l.src === l.dst) continue;
    for (const [a, b] of [[l.src, l.dst], [l.dst, l.src]]) {
      let list = neighbours.get(a);
      if (!list) neighbours.set(a, (list = []));
      list.push({ to: b, link: l });
    }
  }
  const dist = new Map<string, number>([[src, 0]]);
  const prev = new Map<string, { from: string; link: string }>();
  const done = new Set<string>();
  // Networks are tens to hundreds of routers: a linear scan for the nearest is simpler than a heap and fast enough.
  for (;;) {
    let u: string | undefined;
    for (const [id, d] of dist) if (!done.has(id) && (u === undefined || d < dist.get(u)!)) u = id;
    if (u === undefined) break;
    done.add(u);
    // Traffic may leave the source and reach any router, but only pass through those that allow it.
    if (u !== src && routers.get(u)!.noTraversal) continue;
    for (const { to, link } of neighbours.get(u) ?? []) {
      if (done.has(to)) continue;
      const alt = dist.get(u)! + link.cost + Math.max(routers.get(to)!.cost, MIN_ROUTER_COST);
      const known = dist.get(to);
      if (known === undefined || alt < known || (alt === known && link.id < prev.get(to)!.link)) {
        dist.set(to, alt);
        prev.set(to, { from: u, link: link.id });
      }
    }
  }
  return (dst) => {
    const cost = dist.get(dst);
    if (cost === undefined) return undefined;
    const path: Path = { routers: [dst], links: [], cost };
    for (let at = dst; at !== src; ) {
      const p = prev.get(at)!;
      path.routers.unshift(p.from);
      path.links.unshift(p.link);
      at = p.from;
    }
    return path;
  };
}

export interface RouteForward {
  srcAddress: string;
  dstAddress: string;
  dstType: number;
}

export interface RouteEgress {
  binding: string;
  address: string;
  destination: string;
  peerData: Map<number, Buffer>;
}

/** What one router of the path is told: its forwarding entries, and at the egress the terminator to dial. */
export interface RouteStep {
  routerId: string;
  forwards: RouteForward[];
  egress?: RouteEgress;
}

/**
 * The Route of each router on the path, as upstream builds them: a one-router path joins ingress and
 * egress directly; otherwise the ingress forwards to the first link, transit routers from link to link,
 * and the egress from the last link to the terminator. `egress` is left out on a reroute: the egress
 * side already exists and only the forwarding changes.
 */
export function routeSteps(path: Path, ingressId: string, egressId: string, egress?: RouteEgress): RouteStep[] {
  const { routers, links } = path;
  if (!links.length) {
    return [
      {
        routerId: routers[0],
        forwards: [
          { srcAddress: ingressId, dstAddress: egressId, dstType: DestType.End },
          { srcAddress: egressId, dstAddress: ingressId, dstType: DestType.Start },
        ],
        egress,
      },
    ];
  }
  const steps: RouteStep[] = [
    {
      routerId: routers[0],
      forwards: [
        { srcAddress: ingressId, dstAddress: links[0], dstType: DestType.Link },
        { srcAddress: links[0], dstAddress: ingressId, dstType: DestType.Start },
      ],
    },
  ];
  for (let i = 1; i < links.length; i++) {
    steps.push({
      routerId: routers[i],
      forwards: [
        { srcAddress: links[i - 1], dstAddress: links[i], dstType: DestType.Link },
        { srcAddress: links[i], dstAddress: links[i - 1], dstType: DestType.Link },
      ],
    });
  }
  const last = links[links.length - 1];
  steps.push({
    routerId: routers[routers.length - 1],
    forwards: [
      { srcAddress: egressId, dstAddress: last, dstType: DestType.Link },
      { srcAddress: last, dstAddress: egressId, dstType: DestType.End },
    ],
    egress,
  });
  return steps;
}
