// CreateApiSessionRequest (20400), a 1.x router's tunneler starting (it exits when refused: "ensure tunneler
// mode is enabled for this router"): the API session the controller keeps for the router's identity, with
// the config types it reads (intercept.v1, host.v1, host.v2), answered as CreateApiSessionResponse (20401).
// The router's EnvInfo and SdkInfo are kept on the identity, as an SDK's login keeps its own.
import { message, type Message } from '../../channel/codec.js';
import { decode, encode } from '../../channel/protobuf.js';
import { answerError, apiSessionResponse } from './common.js';
import { TunnelSchemas, TunnelType } from './messages.js';
import type { RouterTunneler } from './state.js';
import { TunnelerRefused } from '../../../model/router-tunneler.js';
import { recordClientInfo } from '../../../model/auth/authenticate.js';

/** The fields of EnvInfo / SdkInfo that say something, as an SDK's login records them on its identity. */
const said = (o: Record<string, unknown> | undefined): Record<string, string> | undefined => {
  const kept = Object.entries(o ?? {}).filter(([, v]) => typeof v === 'string' && v !== '');
  return kept.length ? (Object.fromEntries(kept) as Record<string, string>) : undefined;
};

export async function createApiSession(t: RouterTunneler, m: Message) {
  const req = decode(TunnelSchemas.CreateApiSessionRequest, m.body);
  try {
    const identity = await t.identity();
    const { apiSession } = await t.ensureApiSession(identity, req.configTypes as string[]);
    // The router's platform and build (type ziti-router:tunnel), shown on its identity as upstream shows them.
    await recordClientInfo(t.ctx, identity.id, { envInfo: said(req.envInfo), sdkInfo: said(req.sdkInfo) });
    t.conn.channel.reply(m, message(TunnelType.CreateApiSessionResponse, [], encode(TunnelSchemas.CreateApiSessionResponse, apiSessionResponse(t, identity, apiSession))));
    t.log.info({ router: t.conn.name, identity: identity.name, apiSession: apiSession.id }, 'ctrl: the router\'s tunneler has its API session');
  } catch (e) {
    const refused = e instanceof TunnelerRefused;
    t.log[refused ? 'info' : 'warn']({ router: t.conn.name, reason: (e as Error).message }, 'ctrl: refused the router\'s tunneler an API session');
    answerError(t, m, (e as Error).message, refused ? e.code : 1);
  }
}
