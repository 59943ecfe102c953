// CreateTerminatorV2Request (ctrl-channel-1.1.md 2.5).
import { message, type Message } from '../../channel/codec.js';
import { EdgeError } from '../../channel/messages.js';
import { decode, encode } from '../../channel/protobuf.js';
import { Refused } from '../../session-checks.js';
import { CtrlType, Schemas, TerminatorResult } from '../messages.js';
import type { CtrlRouter } from './router.js';
import { storeTerminator } from './common.js';

/** CreateTerminatorV2 (section 2.5): the router answered its SDK already; we validate, store and confirm. */
export async function createTerminator(r: CtrlRouter, m: Message) {
  const req = decode(Schemas.CreateTerminatorV2Request, m.body);
  const answer = (result: number, msg = '') => r.channel.reply(m, message(CtrlType.CreateTerminatorV2Response, [], encode(Schemas.CreateTerminatorV2Response, { terminatorId: req.address, result, msg })));
  if (!req.address) return answer(TerminatorResult.FailedOther, 'no terminator address');
  try {
    await storeTerminator(r, req.address, req.address, req);
    answer(TerminatorResult.Success);
  } catch (e) {
    answer(e instanceof Refused && e.code !== EdgeError.Internal ? TerminatorResult.FailedInvalidSession : TerminatorResult.FailedOther, (e as Error).message);
  }
}
