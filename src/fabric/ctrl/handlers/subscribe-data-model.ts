// SubscribeToDataModelRequest: a 2.x router asks for the router data model (../../rdm/).
import type { Message } from '../../channel/codec.js';
import { decode } from '../../channel/protobuf.js';
import { RdmSchemas } from '../../rdm/schemas.js';
import type { CtrlRouter } from './router.js';

export function subscribeDataModel(r: CtrlRouter, m: Message) {
  return r.server.rdm.subscribe(r, decode(RdmSchemas.SubscribeToDataModelRequest, m.body));
}
