// Who a request acts as, for the events its writes emit: a copy of the context carrying the caller
// (model/context.ts Ctx.actor). A copy per request rather than async-local storage: async hooks would
// tax every promise on the hot paths, and the routes that write already hold the request.
import os from 'node:os';
import type { FastifyRequest } from 'fastify';
import type { Ctx } from '../model/context.js';
import type { Actor } from '../model/events/types.js';

let localUser: Actor['local'] | undefined;

/** The OS user and host of the CLI's local mode (read once). */
function localOrigin(): NonNullable<Actor['local']> {
  if (!localUser) {
    let osUser = `uid ${process.getuid?.() ?? '?'}`;
    try {
      osUser = os.userInfo().username;
    } catch {
      // no passwd entry (a container): the uid says who
    }
    localUser = { osUser, host: os.hostname() };
  }
  return localUser;
}

export function actorOf(req: FastifyRequest): Actor | undefined {
  const p = req.principal;
  if (!p) return undefined;
  return {
    identityId: p.identityId,
    identityName: p.identityName,
    ...(p.apiSessionId ? { apiSessionId: p.apiSessionId } : {}),
    ...(p.apiTokenId ? { apiTokenId: p.apiTokenId } : {}),
    ...(p.local ? { local: localOrigin() } : { remoteAddress: req.ip }),
    method: req.method,
  };
}

/** The context for a request's model calls: the shared one, plus who is calling. */
export function actorCtx(ctx: Ctx, req: FastifyRequest): Ctx {
  const actor = actorOf(req);
  return actor ? { ...ctx, actor } : ctx;
}
