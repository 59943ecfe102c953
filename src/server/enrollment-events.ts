// Enrollment events, from the answer every enrollment route gives (there are several routes and forms,
// as metrics.ts counts them): the method, the outcome, the caller's address, whose enrollment it was
// (identity_id, or router_id for a router's) once the token or certificate named it, and, for a refusal,
// the error's code and message (never the token or the CSR). The routes hand the model a context
// carrying the request's note (enrollCtx), which the enrollment functions fill in.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Ctx } from '../model/context.js';
import { ApiError } from '../model/errors.js';
import { enrollmentEvent } from '../model/events/emit.js';

const METHODS = new Set(['ott', 'ottca', 'updb', 'ca', 'erott', 'trott', 'extend/router', 'challenge', 'token']);

declare module 'fastify' {
  interface FastifyRequest {
    enrollError?: string;
    enrolling?: NonNullable<Ctx['enrolling']>;
  }
}

/** The context for an enrollment route's model calls: the shared one, plus the request's note of whose enrollment it is. */
export function enrollCtx(ctx: Ctx, req: FastifyRequest): Ctx {
  req.enrolling ??= {};
  return { ...ctx, enrolling: req.enrolling };
}

export function registerEnrollmentEvents(app: FastifyInstance, ctx: Ctx) {
  app.decorateRequest('enrollError', undefined);
  app.decorateRequest('enrolling', undefined);
  const isEnroll = (method: string, route: string | undefined) => method === 'POST' && !!route && /\/enroll(\/|$)/.test(route);
  app.addHook('onError', async (request, _reply, err) => {
    if (isEnroll(request.method, request.routeOptions.url)) request.enrollError = err instanceof ApiError ? `${err.code}: ${err.message}` : 'internal error';
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url;
    if (!isEnroll(request.method, route)) return;
    const m = /\/enroll(?:\/(.+))?$/.exec(route!)?.[1] ?? String((request.query as { method?: unknown } | undefined)?.method ?? 'other');
    const ok = reply.statusCode < 300;
    enrollmentEvent(ctx, METHODS.has(m) ? m : 'other', ok, request.ip, ok ? '' : (request.enrollError ?? `HTTP ${reply.statusCode}`), request.enrolling ?? {});
  });
}
