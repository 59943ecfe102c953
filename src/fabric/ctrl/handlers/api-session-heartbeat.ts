// ApiSessionHeartbeat: the API sessions a router's SDKs use, kept active (and, from 1.x routers, who is online).
import type { Message } from '../../channel/codec.js';
import { decode } from '../../channel/protobuf.js';
import { touchApiSessions } from '../../../model/data-plane.js';
import { Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';

export function apiSessionHeartbeat(r: CtrlRouter, m: Message) {
  const { tokens } = decode(Schemas.ApiSessionHeartbeat, m.body);
  void touchApiSessions(r.ctx, r.server.idsOfTokens(tokens as string[])).catch(() => {});
  // 2.x routers say who is connected in ConnectEvents (a heartbeat would keep one that left online for minutes).
  if (!r.hello.v2) r.server.heartbeat(tokens as string[]);
}
