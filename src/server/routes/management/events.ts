// The live event stream (GET /events, server-sent events) and the stored audit (GET /audit-events).
// Both are an administrator's reads (admins, read-only admins, admin API tokens): events name
// identities, addresses and the states of every entity.
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Ctx } from '../../../model/context.js';
import { couldNotValidate } from '../../../model/errors.js';
import { listAudit } from '../../../model/events/audit-store.js';
import { EVENT_TYPES, namespacesOf, type ZtcEvent } from '../../../model/events/types.js';
import { ErrorBody } from '../../../model/schemas/common.js';
import { errors } from '../../crud.js';
import { meta } from '../../envelope.js';

const tags = ['Events'];
const TypesQuery = Type.Optional(Type.String({ maxLength: 1000, description: `comma-separated event types: ${Object.keys(EVENT_TYPES).join(', ')} (default: all)` }));

/** A stream whose reader falls this far behind is closed: a stalled client must not hold the controller's memory. */
const MAX_UNSENT_BYTES = 4 * 1024 * 1024;
/** A comment line this often keeps proxies and idle timers from closing a quiet stream. */
const KEEPALIVE_MS = 15_000;

function parseTypes(text: string | undefined): Set<string> {
  const names = (text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const { namespaces, unknown } = namespacesOf(names);
  if (unknown.length) throw couldNotValidate('types', `unknown event type '${unknown[0]}': use ${Object.keys(EVENT_TYPES).join(', ')}`, unknown[0]);
  return namespaces;
}

/** 1d, 12h, 30m, 45s, 2w, or an ISO-8601 time. */
export function parseSince(text: string, now: Date): Date {
  const m = /^(\d{1,6})([smhdw])$/.exec(text.trim());
  if (m) return new Date(now.getTime() - Number(m[1]) * { s: 1e3, m: 6e4, h: 36e5, d: 864e5, w: 6048e5 }[m[2] as 's']);
  const t = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(t)) throw couldNotValidate('since', 'must be a duration (30m, 12h, 1d, 2w) or an ISO-8601 time', text);
  return new Date(t);
}

/** The comment a stream ends with when the controller stops (ztc events --follow says so). */
export const STOPPING_COMMENT = ': the controller is stopping';

export function registerEvents(app: FastifyInstance, ctx: Ctx) {
  // Open streams, each ended by the stop: a stream never ends by itself, and the server's close waits
  // for every response to finish (it held `ztc serve` on SIGTERM until systemd killed it).
  const streams = new Set<() => void>();
  app.addHook('preClose', (done) => {
    for (const stop of [...streams]) stop();
    done();
  });
  app.get(
    '/events',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'streamEvents', tags,
        summary: 'Follow events as they happen (text/event-stream): entity changes, logins, API sessions, sessions, enrollments, admin recovery',
        querystring: Type.Object({ types: TypesQuery }),
        response: { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody },
      },
    },
    async (req, reply) => {
      const wanted = parseTypes((req.query as { types?: string }).types);
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
      res.write(': ztc events\n\n');
      let seq = 0;
      // The hub hands over events in batches, already serialised: one write (one TLS record, one system
      // call) a batch instead of one an event, as a busy controller emits an event per session created.
      const send = (events: readonly ZtcEvent[], lines: readonly string[]) => {
        let text = '';
        for (let i = 0; i < events.length; i++) {
          const e = events[i];
          if (wanted.size && !wanted.has(e.namespace)) continue;
          text += `id: ${++seq}\nevent: ${e.namespace}\ndata: ${lines[i]}\n\n`;
        }
        if (!text || res.writableEnded) return;
        if (res.writableLength + text.length > MAX_UNSENT_BYTES) return close();
        res.write(text);
      };
      const unsubscribe = ctx.events.subscribeStream(send);
      const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
      keepalive.unref();
      function close() {
        streams.delete(stopping);
        unsubscribe();
        clearInterval(keepalive);
        if (!res.writableEnded) res.end();
      }
      // The last words, then the response's end and the connection's (it was kept alive, and the
      // server, closing, would otherwise wait for it to idle out).
      function stopping() {
        const socket = res.socket;
        if (!res.writableEnded) res.write(`${STOPPING_COMMENT}\n\n`);
        close();
        socket?.end();
      }
      streams.add(stopping);
      res.on('close', close);
      req.raw.on('close', close);
    },
  );

  app.get(
    '/audit-events',
    {
      config: { access: 'admin' },
      schema: {
        operationId: 'listAuditEvents', tags,
        summary: 'Stored events, newest first: who changed an entity and when, logins, enrollments, admin recovery, posture failures, sessions made and refused (kept auditRetentionDays)',
        querystring: Type.Object({
          entity: Type.Optional(Type.String({ maxLength: 255, description: 'an entity id or name' })),
          actor: Type.Optional(Type.String({ maxLength: 255, description: 'the identity (id or name) that acted' })),
          since: Type.Optional(Type.String({ maxLength: 40, description: 'a duration back from now (30m, 12h, 1d, 2w) or an ISO-8601 time' })),
          types: TypesQuery,
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
          offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, default: 0 })),
        }),
        response: { 200: Type.Object({ data: Type.Array(Type.Record(Type.String(), Type.Unknown())), meta: Type.Record(Type.String(), Type.Unknown()) }), ...errors(400, 401, 403) },
      },
    },
    async (req) => {
      const q = req.query as { entity?: string; actor?: string; since?: string; types?: string; limit?: number; offset?: number };
      const limit = q.limit ?? 100;
      const offset = q.offset ?? 0;
      const { events, totalCount } = await listAudit(ctx.store.db, {
        entity: q.entity || undefined,
        actor: q.actor || undefined,
        since: q.since ? parseSince(q.since, ctx.clock.now()) : undefined,
        namespaces: parseTypes(q.types),
        limit,
        offset,
      });
      return { data: events, meta: { ...meta(), pagination: { limit, offset, totalCount }, retentionDays: ctx.config.auditRetentionDays } };
    },
  );
}
