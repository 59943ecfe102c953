// Enrollment events, from the answer every enrollment route gives (there are several routes and forms,
// as metrics.ts counts them): the method, the outcome, the caller's address and, for a refusal, the
// error's code and message (never the token or the CSR).
import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../model/context.js';
import { ApiError } from '../model/errors.js';
import { enrollmentEvent } from '../model/events/emit.js';

const METHODS = new Set(['ott', 'ottca', 'updb', 'ca', 'erott', 'trott', 'extend/router', 'challenge']);

declare module 'fastify' {
  interface FastifyRequest {
    enrollError?: string;
  }
}

export function registerEnrollmentEvents(app: FastifyInstance, ctx: Ctx) {
  app.decorateRequest('enrollError', undefined);
  const isEnroll = (method: string, route: string | undefined) => method === 'POST' && !!route && /\/enroll(\/|$)/.test(route);
  app.addHook('onError', async (request, _reply, err) => {
    if (isEnroll(request.method, request.routeOptions.url)) request.enrollError = err instanceof ApiError ? `${err.code}: ${err.message}` : 'internal error';
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url;
    if (!isEnroll(request.method, route)) return;
    const m = /\/enroll(?:\/(.+))?$/.exec(route!)?.[1] ?? String((request.query as { method?: unknown } | undefined)?.method ?? 'other');
    const ok = reply.statusCode < 300;
    enrollmentEvent(ctx, METHODS.has(m) ? m : 'other', ok, request.ip, ok ? '' : (request.enrollError ?? `HTTP ${reply.statusCode}`));
  });
}
