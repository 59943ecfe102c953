// The data plane's side of certificates that renew themselves (model/pki/renewal.ts): at every look of
// the API thread it is told the controller's time, and when pki/ changed it loads it again, without a
// restart: the control port serves the new server certificate (and trusts the new intermediate) from
// the next handshake, routers connected there keep their connections; the token checks of the embedded
// router use the new keys and keep the replaced ones (model/auth/oidc/tokens.ts); 2.x routers are sent
// the new key as a change set of their data model at once, the replaced one staying until it is
// withdrawn. The embedded router's own certificate renews by the same rule, on the edge port.
import type { Server } from 'node:tls';
import { parentPort } from 'node:worker_threads';
import type { Clock } from '../model/clock.js';
import type { Ctx } from '../model/context.js';
import { loadOrCreatePki } from '../model/pki/pki.js';
import { channelContext } from './channel/listener.js';
import type { EdgeRouter } from './index.js';
import type { RouterDataModelSender } from './rdm/sender.js';

/** API thread -> data plane: the controller's time, and whether pki/ changed; answered with PkiDone. */
export interface PkiMessage {
  pki: { id: number; now: number; changed: boolean };
}
export interface PkiDone {
  pkiDone: { id: number; error?: string };
}

/**
 * The data plane's clock: the system's, moved by how far the controller's clock is from it when it
 * last said (a test's moved clock; in production the two agree, and a difference under a second is
 * the message's own delay, ignored).
 */
export function followingClock(base: Clock): Clock & { follow(now: number): void } {
  let offset = 0;
  return {
    now: () => new Date(base.now().getTime() + offset),
    monotonic: () => base.monotonic(),
    follow(now: number) {
      const d = now - base.now().getTime();
      offset = Math.abs(d) < 1000 ? 0 : d;
    },
  };
}

export function listenForPki(o: { ctx: Ctx; clock: { follow(now: number): void }; ctrl?: { server?: Server; rdm: RouterDataModelSender }; router?: EdgeRouter; log: { warn(o: object, msg: string): void } }) {
  let queue: Promise<unknown> = Promise.resolve();
  const reload = async (m: PkiMessage['pki']) => {
    o.clock.follow(m.now);
    const { ctx } = o;
    if (m.changed) {
      const fresh = await loadOrCreatePki(ctx.config.dataDir, ctx.config.hostnames, () => {}, { keepServer: true, now: m.now });
      // In place: every part of the data plane holds this object (ctx.pki).
      Object.assign(ctx.pki, fresh);
      o.ctrl?.server?.setSecureContext(channelContext({ certPem: fresh.serverPem + fresh.intermediatePem, keyPem: fresh.serverKeyPem, caPem: fresh.caBundlePem }));
      await o.ctrl?.rdm.keysChanged();
    }
    await o.router?.renewCertificate(m.now);
  };
  parentPort!.on('message', (m: unknown) => {
    if (!m || typeof m !== 'object' || !('pki' in m)) return;
    const msg = (m as PkiMessage).pki;
    const run = queue.then(() => reload(msg));
    queue = run.catch(() => {});
    run.then(
      () => parentPort!.postMessage({ pkiDone: { id: msg.id } } satisfies PkiDone),
      (e: Error) => {
        o.log.warn({ err: e.message }, 'pki: the data plane could not take the renewed certificates');
        parentPort!.postMessage({ pkiDone: { id: msg.id, error: e.message } } satisfies PkiDone);
      },
    );
  });
}
