// UpdateRouterInterfaces: a 2.x router's network interfaces, acknowledged (it reports again until one is), not kept.
import { bool, message, type Message } from '../../channel/codec.js';
import { ContentType, Header } from '../../channel/messages.js';
import type { CtrlRouter } from './router.js';

export function updateRouterInterfaces(r: CtrlRouter, m: Message) {
  r.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
}
