// Failed TLS handshakes on the API port (ziti#1834): told as `tls` events and counted
// (ztc_tls_handshakes_failed_total), as the data plane tells those of the edge and control ports
// (fabric/channel/listener.ts). model/events/tls-failures.ts folds a flood from one address.
import type { FastifyInstance } from 'fastify';
import type { Socket } from 'node:net';
import type { Ctx } from '../model/context.js';
import type { Server } from 'node:tls';
import { clientAddresses, TlsFailures } from '../model/events/tls-failures.js';

export function watchTlsFailures(app: FastifyInstance, ctx: Ctx) {
  const failures = new TlsFailures(ctx.events);
  const addressOf = clientAddresses(app.server as unknown as Server);
  app.server.on('tlsClientError', (err: Error, socket: Socket) => {
    failures.failed('api', addressOf(socket), err);
    socket.destroy();
  });
  app.addHook('onClose', (_app, done) => {
    failures.close();
    done();
  });
}
