// Path finding and Route building across upstream routers (src/fabric/ctrl/paths.ts), against the forms
// ctrl-channel-1.1.md section 2.6 gives for one router, two, and a transit router between.
import { describe, expect, it } from 'vitest';
import { DestType } from '../../src/fabric/ctrl/messages.js';
import { cheapestPaths, MIN_ROUTER_COST, routeSteps, type PathLink, type PathRouter } from '../../src/fabric/ctrl/paths.js';

const r = (cost = 0, noTraversal = false): PathRouter => ({ cost, noTraversal });
const link = (id: string, src: string, dst: string, cost = 1): PathLink => ({ id, src, dst, cost });

describe('cheapest paths', () => {
  const routers = new Map([['a', r()], ['b', r()], ['c', r()], ['d', r(50)]]);

  it('is the router itself at no cost, and undefined for a router with no link', () => {
    const to = cheapestPaths('a', routers, []);
    expect(to('a')).toEqual({ routers: ['a'], links: [], cost: 0 });
    expect(to('b')).toBeUndefined();
  });

  it('uses links in either direction, adding the link and the entered router cost (at least the minimum)', () => {
    const to = cheapestPaths('b', routers, [link('ab', 'a', 'b')]);
    expect(to('a')).toEqual({ routers: ['b', 'a'], links: ['ab'], cost: 1 + MIN_ROUTER_COST });
  });

  it('prefers the cheaper of two routes and crosses transit routers', () => {
    const links = [link('ab', 'a', 'b'), link('bc', 'b', 'c'), link('ad', 'a', 'd'), link('dc', 'd', 'c')];
    expect(cheapestPaths('a', routers, links)('c')).toEqual({ routers: ['a', 'b', 'c'], links: ['ab', 'bc'], cost: 2 * (1 + MIN_ROUTER_COST) });
    // Without b the route goes through d, whose own cost counts.
    const noB = links.filter((l) => !l.id.includes('b'));
    expect(cheapestPaths('a', routers, noB)('c')?.cost).toBe(1 + 50 + 1 + MIN_ROUTER_COST);
  });

  it('never passes through a no-traversal router, though it may end there', () => {
    const rs = new Map([['a', r()], ['b', r(0, true)], ['c', r()]]);
    const links = [link('ab', 'a', 'b'), link('bc', 'b', 'c')];
    expect(cheapestPaths('a', rs, links)('b')?.links).toEqual(['ab']);
    expect(cheapestPaths('a', rs, links)('c')).toBeUndefined();
  });

  it('ignores links to routers that are not connected', () => {
    expect(cheapestPaths('a', new Map([['a', r()]]), [link('ab', 'a', 'b')])('b')).toBeUndefined();
  });
});

describe('route steps', () => {
  const egress = { binding: 'edge', address: 'E', destination: 'term', peerData: new Map() };

  it('joins ingress and egress on a one-router path', () => {
    expect(routeSteps({ routers: ['a'], links: [], cost: 0 }, 'I', 'E', egress)).toEqual([
      { routerId: 'a', egress, forwards: [{ srcAddress: 'I', dstAddress: 'E', dstType: DestType.End }, { srcAddress: 'E', dstAddress: 'I', dstType: DestType.Start }] },
    ]);
  });

  it('forwards ingress -> link -> transit -> link -> egress', () => {
    const steps = routeSteps({ routers: ['a', 'b', 'c'], links: ['l1', 'l2'], cost: 0 }, 'I', 'E', egress);
    expect(steps).toEqual([
      { routerId: 'a', forwards: [{ srcAddress: 'I', dstAddress: 'l1', dstType: DestType.Link }, { srcAddress: 'l1', dstAddress: 'I', dstType: DestType.Start }] },
      { routerId: 'b', forwards: [{ srcAddress: 'l1', dstAddress: 'l2', dstType: DestType.Link }, { srcAddress: 'l2', dstAddress: 'l1', dstType: DestType.Link }] },
      { routerId: 'c', egress, forwards: [{ srcAddress: 'E', dstAddress: 'l2', dstType: DestType.Link }, { srcAddress: 'l2', dstAddress: 'E', dstType: DestType.End }] },
    ]);
  });

  it('leaves the egress out on a reroute', () => {
    expect(routeSteps({ routers: ['a', 'b'], links: ['l1'], cost: 0 }, 'I', 'E').at(-1)!.egress).toBeUndefined();
  });
});
