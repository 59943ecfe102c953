// The data plane's events, as upstream's controller names them (fabric.routers, fabric.links,
// fabric.circuits, fabric.terminators): each an emit() on this thread's hub, which the main thread
// forwards to the events file and the live stream (thread.ts). Not kept in the audit table: a busy
// network makes many circuits a second.
import type { Ctx } from '../model/context.js';
import type { CircuitEvent, GrantedBy, LinkEvent, RouterEvent, TerminatorEvent } from '../model/events/types.js';

export function routerEvent(ctx: Ctx, routerId: string, online: boolean) {
  ctx.events.emit(ctx.events.stamp<RouterEvent>({ namespace: 'fabric.routers', event_type: online ? 'router-online' : 'router-offline', router_id: routerId, router_online: online }));
}

export function linkEvent(ctx: Ctx, type: LinkEvent['event_type'], l: { id: string; src: string; dst: string; protocol: string; dialAddress: string; cost: number }) {
  ctx.events.emit(ctx.events.stamp<LinkEvent>({ namespace: 'fabric.links', event_type: type, link_id: l.id, src_router_id: l.src, dst_router_id: l.dst, protocol: l.protocol, dial_address: l.dialAddress, cost: l.cost }));
}

export function circuitEvent(
  ctx: Ctx,
  type: CircuitEvent['event_type'],
  c: { id: string; clientId: string; serviceId: string; terminatorId: string; routers: string[]; links: string[]; setupNs?: number; sessionId?: string; grantedBy?: GrantedBy },
) {
  ctx.events.emit(ctx.events.stamp<CircuitEvent>({
    namespace: 'fabric.circuits', event_type: type, circuit_id: c.id, client_id: c.clientId, service_id: c.serviceId, terminator_id: c.terminatorId,
    path: { nodes: c.routers, links: c.links }, link_count: c.links.length, ...(c.setupNs !== undefined ? { creation_timespan: Math.round(c.setupNs) } : {}),
    // The access log (edge#227): the dialing session and what granted the circuit.
    ...(c.sessionId ? { session_id: c.sessionId } : {}), ...(c.grantedBy ? { granted_by: c.grantedBy } : {}),
  }));
}

export function terminatorEvent(ctx: Ctx, type: TerminatorEvent['event_type'], t: { id: string; serviceId: string; routerId: string; hostId: string }) {
  ctx.events.emit(ctx.events.stamp<TerminatorEvent>({ namespace: 'fabric.terminators', event_type: type, terminator_id: t.id, service_id: t.serviceId, router_id: t.routerId, host_id: t.hostId }));
}
