// The API side of certificates that renew themselves (model/pki/renewal.ts): one PkiRenewal per app
// (POST /pki/renew goes through it too, so a renewal asked for and one that came due are the same),
// the readiness check that says when each renews and turns unhealthy well before an expiry matters,
// and the metrics of seconds left. startController starts its looks and connects it to the TLS
// listeners; a local-mode command's app never starts it (a running controller takes up what the
// command changed on disk at its next look).
import type { FastifyInstance } from 'fastify';
import type { Ctx } from '../model/context.js';
import { edgeRouterPem, ownExpiries, PkiRenewal } from '../model/pki/renewal.js';
import { OWN_WARNING_DAYS } from '../model/pki/status.js';

declare module 'fastify' {
  interface FastifyInstance {
    pkiRenewal: PkiRenewal;
  }
}

const DAY = 86_400_000;
/** A renewal this late (it keeps failing) makes the controller unhealthy, months before the certificate ends. */
export const OVERDUE_DAYS = 7;

const at = (ms: number) => new Date(ms).toISOString();

export function registerPkiRenewal(app: FastifyInstance, ctx: Ctx): PkiRenewal {
  const renewal = new PkiRenewal(ctx, { info: (o, m) => app.log.info(o, m), warn: (o, m) => app.log.warn(o, m) });
  app.decorate('pkiRenewal', renewal);
  const expiries = () => ownExpiries(ctx.pki, edgeRouterPem(ctx.config.dataDir));
  // Readiness: healthy while every certificate of the controller's own is further than OWN_WARNING_DAYS
  // from its end and no renewal is more than OVERDUE_DAYS late; the details say when each renews.
  app.health.add('pki.renewal', () => {
    const now = ctx.clock.now().getTime();
    const problems: string[] = [];
    const said: string[] = [];
    for (const c of expiries()) {
      if (c.notAfter - now < OWN_WARNING_DAYS * DAY) problems.push(`the ${c.certificate} certificate ${c.notAfter <= now ? 'expired' : 'expires'} at ${at(c.notAfter)}`);
      else if (c.renewsAt !== null && now - c.renewsAt > OVERDUE_DAYS * DAY) problems.push(`the ${c.certificate} certificate was due to renew at ${at(c.renewsAt)} and has not`);
      said.push(c.renewsAt === null ? `${c.certificate} expires ${at(c.notAfter)} (not renewed by itself)` : `${c.certificate} renews at ${at(c.renewsAt)}`);
    }
    const failure = renewal.failure ? `; the last renewal of the ${renewal.failure.certificate} failed at ${renewal.failure.at}: ${renewal.failure.error}` : '';
    if (problems.length) throw new Error(`${problems.join('; ')}${failure}`);
    return `${said.join(', ')}${failure}`;
  });
  app.metrics?.certificates(expiries, () => ctx.clock.now().getTime());
  app.addHook('onClose', (_app, done) => {
    renewal.stop();
    done();
  });
  return renewal;
}
