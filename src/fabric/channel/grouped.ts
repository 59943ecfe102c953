// Grouped ("multi-underlay") channels, as channel v4 speaks them (OpenZiti 2.x routers dial their
// controllers this way; ../shared/reference/ctrl-channel-2.x.md section 1.2): one logical channel made of
// typed underlays (TCP connections), held together by a connection id and a group secret. The first
// underlay's hello says IsGrouped, IsFirstGroupConnection and its type (ctrl.default); the listener
// answers with the connection id and echoes the group headers, with a secret it makes when the hello
// brought none (the dialer refuses a Result without one: "no group secret header found for multi
// channel"). Further underlays name the connection id and secret of their group.
//
// This side takes one underlay per group: the controller does not announce GroupedCtrlChan (capability
// bit 5), so a router never opens a second one (upstream's router: maxHigh = 0). A later hello that
// is not a group's first is refused with a failed Result (unknown group, or a second underlay), as
// upstream's MultiListener closes one it cannot place; the router then dials from scratch.
import { randomUUID } from 'node:crypto';
import { bool, readBool, str, type Message } from './codec.js';
import { Header } from './messages.js';

/** What a grouped hello says of its underlay. */
export interface GroupedHello {
  /** Whether it opens its group (IsFirstGroupConnection). */
  first: boolean;
  /** The underlay's type (Type header), e.g. ctrl.default. */
  type: string;
  /** The connection id the dialer named (a later underlay's group), if any. */
  connectionId?: string;
  /** The group secret the dialer brought, if any. */
  secret?: Buffer;
}

/** The grouped headers of a hello, or undefined for an ungrouped (1.x, SDK) hello. */
export function readGroupedHello(hello: Message): GroupedHello | undefined {
  if (!readBool(hello.headers.get(Header.IsGrouped))) return undefined;
  const secret = hello.headers.get(Header.GroupSecret);
  return {
    first: readBool(hello.headers.get(Header.IsFirstGroupConnection)),
    type: hello.headers.get(Header.Type)?.toString('utf8') ?? '',
    connectionId: hello.headers.get(Header.ConnectionId)?.toString('utf8') || undefined,
    secret: secret?.length ? Buffer.from(secret) : undefined,
  };
}

/** One group this side holds: its connection id and secret. */
export interface UnderlayGroup {
  connectionId: string;
  secret: Buffer;
}

/**
 * The groups open on one listener, by connection id: a group's first underlay opens it (its connection
 * id is the dialer's when it named one, as upstream's listener keeps it, else a new one; its secret the
 * dialer's, else a new one), and its channel's close ends it.
 */
export class UnderlayGroups {
  private groups = new Map<string, UnderlayGroup>();

  open(g: GroupedHello): UnderlayGroup {
    const connectionId = g.connectionId && !this.groups.has(g.connectionId) ? g.connectionId : randomUUID();
    const group = { connectionId, secret: g.secret ?? Buffer.from(randomUUID()) };
    this.groups.set(connectionId, group);
    return group;
  }

  close(group: UnderlayGroup) {
    if (this.groups.get(group.connectionId) === group) this.groups.delete(group.connectionId);
  }

  /**
   * Why a hello that is not a group's first is refused: its group is unknown here (or its secret is
   * wrong, said the same way: nothing is told of a group to one without its secret), or it is known
   * and would be a second underlay, which this side does not take.
   */
  refusal(g: GroupedHello): string {
    const known = g.connectionId ? this.groups.get(g.connectionId) : undefined;
    if (!known || !g.secret || !known.secret.equals(g.secret)) return `no channel with connection id '${g.connectionId ?? ''}' for this underlay (it is not its group's first): dial the group again from its first underlay`;
    return `channel '${known.connectionId}' takes no further underlays (this controller does not announce grouped control channels)`;
  }
}

/** The Result headers of an accepted grouped hello: the group's connection id, IsGrouped, the type, the secret. */
export function groupedResultHeaders(g: GroupedHello, group: UnderlayGroup): [number, Buffer][] {
  const out: [number, Buffer][] = [
    [Header.ConnectionId, str(group.connectionId)],
    [Header.IsGrouped, bool(true)],
    [Header.GroupSecret, group.secret],
  ];
  if (g.type) out.push([Header.Type, str(g.type)]);
  return out;
}
