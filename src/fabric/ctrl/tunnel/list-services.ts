// ListServicesRequest (20404), a 1.x router's tunneler polling (every 15 s by default): its body is the
// token of the list it holds. Answered, when the list changed, by a ServiceList (20405, not a reply): the
// services its identity may Dial or Bind, with their configs of the types it asked for, and a new token
// (a digest of the list; the router only hands it back). Nothing is sent while the list is the same.
import { createHash } from 'node:crypto';
import type { Message } from '../../channel/codec.js';
import { encode } from '../../channel/protobuf.js';
import { tunnelerServices } from '../../../model/router-tunneler.js';
import { TunnelSchemas, TunnelType } from './messages.js';
import type { RouterTunneler } from './state.js';

/** Upstream's limit on the token (a marshalled time): a longer body is not one of ours. */
const MAX_TOKEN = 50;

export async function listServices(t: RouterTunneler, m: Message) {
  if (m.body.length > MAX_TOKEN) return void t.log.warn({ router: t.conn.name, length: m.body.length }, 'ctrl: a service list request with a token too long for one: ignored');
  let services;
  try {
    const identity = await t.identity();
    const { apiSession } = await t.ensureApiSession(identity);
    services = await tunnelerServices(t.ctx, identity.id, apiSession.id, apiSession.configTypes);
  } catch (e) {
    return void t.log.info({ router: t.conn.name, reason: (e as Error).message }, 'ctrl: no service list for the router\'s tunneler');
  }
  const list = services.map((s) => ({ id: s.id, name: s.name, permissions: s.permissions, encryption: s.encryptionRequired, config: Buffer.from(JSON.stringify(s.config)), tags: Buffer.from(JSON.stringify(s.tags)) }));
  const token = createHash('sha256').update(JSON.stringify(list)).digest().subarray(0, 16);
  if (m.body.length && m.body.equals(token)) return;
  t.conn.send(TunnelType.ServiceList, encode(TunnelSchemas.ServicesList, { lastUpdate: token, services: list }));
}
