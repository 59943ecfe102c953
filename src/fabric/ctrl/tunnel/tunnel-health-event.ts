// TunnelHealthEvent (20412, no reply): a host.v2 health check of one of this router's tunnel terminators
// passed or failed (headers 1022 terminator id, 1023 check passed). Upstream only logs it (the check's
// actions arrive as UpdateTunnelTerminator); so does this controller.
import type { Message } from '../../channel/codec.js';
import { TunnelHeader } from './messages.js';
import type { RouterTunneler } from './state.js';

export async function tunnelHealthEvent(t: RouterTunneler, m: Message) {
  const terminator = m.headers.get(TunnelHeader.TerminatorId)?.toString('utf8') ?? '';
  const passed = m.headers.get(TunnelHeader.CheckPassed)?.[0] === 1;
  t.log.info({ router: t.conn.name, terminator, passed }, 'ctrl: a health check of the router\'s tunneler');
}
