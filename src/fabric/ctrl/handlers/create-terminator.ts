// CreateTerminatorRequest, the legacy form.
import { randomUUID } from 'node:crypto';
import { message, str, type Message } from '../../channel/codec.js';
import { EdgeError } from '../../channel/messages.js';
import { decode } from '../../channel/protobuf.js';
import { Refused } from '../../session-checks.js';
import { CtrlType, Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';
import { refuse, storeTerminator } from './common.js';

/** The legacy CreateTerminatorRequest: we name the terminator; the router reaches it as `hosted:<token>`. */
export async function createTerminatorV1(r: CtrlRouter, m: Message) {
  const req = decode(Schemas.CreateTerminatorRequest, m.body);
  try {
    const id = randomUUID();
    await storeTerminator(r, id, `hosted:${req.sessionToken ?? ''}`, req);
    r.channel.reply(m, message(CtrlType.CreateTerminatorResponse, [], str(id)));
  } catch (e) {
    refuse(r, m, (e as Error).message, e instanceof Refused ? e.code : EdgeError.Internal);
  }
}
