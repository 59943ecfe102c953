// VerifyRouter: a link's listening side asks who dialed it.
import { bool, message, str, type Message } from '../../channel/codec.js';
import { ContentType, Header } from '../../channel/messages.js';
import { decode } from '../../channel/protobuf.js';
import { routerFingerprint } from '../../../model/fabric-state.js';
import { Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';

/** VerifyRouter: a link's listening side asks whether the router that dialed it is who it says. */
export async function verifyRouter(r: CtrlRouter, m: Message) {
  const { routerId, fingerprints } = decode(Schemas.VerifyRouter, m.body);
  const known = routerId ? await routerFingerprint(r.ctx, String(routerId)) : null;
  const ok = !!known && (fingerprints as string[]).some((f) => f.toLowerCase() === known);
  const text = ok ? 'router verified' : known ? `router ${routerId} presented a certificate that is not its enrolled one` : `no enrolled router ${routerId}`;
  if (!ok) r.server.log.info({ router: r.name, peer: routerId, reason: text }, 'ctrl: refused a link');
  r.channel.reply(m, message(ContentType.Result, [[Header.ResultSuccess, bool(ok)]], str(text)));
}
