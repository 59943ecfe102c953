// RemoveTerminatorsRequest: the router's SDKs unbound.
import { bool, message, type Message } from '../../channel/codec.js';
import { ContentType, Header } from '../../channel/messages.js';
import { decode } from '../../channel/protobuf.js';
import { Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';

export async function removeRequested(r: CtrlRouter, m: Message) {
  const { terminatorIds } = decode(Schemas.RemoveTerminatorsRequest, m.body);
  // Those made through another controller on the database are taken first (network.ts adoptStored).
  await r.network.adoptStored({ ids: terminatorIds as string[] });
  const mine = new Set(r.network.terminatorsOf(r.routerId));
  await r.network.removeTerminators((terminatorIds as string[]).filter((id) => mine.has(id)));
  r.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(true)]]));
}
