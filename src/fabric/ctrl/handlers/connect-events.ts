// ConnectEvents: which identities' SDKs a 2.x router holds (who is online).
import type { Message } from '../../channel/codec.js';
import { decode } from '../../channel/protobuf.js';
import { Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';

export function connectEvents(r: CtrlRouter, m: Message) {
  r.server.connectEvents(r, decode(Schemas.ConnectEvents, m.body) as { events: { identityId?: string; isConnected?: boolean }[]; fullState?: boolean });
}
