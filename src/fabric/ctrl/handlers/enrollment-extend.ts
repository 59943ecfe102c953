// EnrollmentExtendRouterRequest: a router renewing its certificates over the control channel.
import type { Message } from '../../channel/codec.js';
import { decode, encode } from '../../channel/protobuf.js';
import { issueRouterExtension } from '../../../model/pki/router-enroll.js';
import { CtrlType, Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';
import { adopt } from './common.js';

/** How often one connection may have certificates signed (a 1.1 router asks again after 35 s without an answer). */
const EXTEND_EVERY_MS = 30_000;

/**
 * A router renewing its certificates (a week before they expire, or `ziti router run --extend`):
 * both CSRs signed as at enrollment and sent back as EnrollmentCertsResponse (not a reply). With
 * requireVerification (what 1.1 routers send) they become the router's only once it confirms it
 * holds them (verifyCerts); its current certificate names it until then, so a router that never
 * got them keeps working. Upstream answers a refused request with nothing (the router gives up
 * after 35 s and asks again later); said in our log. One request at a time, at most one every 30 s
 * (each costs two signatures).
 */
export async function extendCerts(r: CtrlRouter, m: Message) {
  const now = Date.now();
  if (r.extending || (r.extension && now - r.extension.at < EXTEND_EVERY_MS)) {
    r.server.log.warn({ router: r.name }, 'ctrl: a certificate renewal request came while another was open: ignored');
    return;
  }
  r.extending = true;
  try {
    const req = decode(Schemas.EnrollmentExtendRouterRequest, m.body);
    const certs = await issueRouterExtension(r.ctx, r.routerId, req.clientCertCsr, req.serverCertCsr);
    if (req.requireVerification) r.extension = { certs, at: now };
    else await adopt(r, certs);
    // Each certificate with the intermediate that issued it (router-enroll.ts issueRouterCerts), as at enrollment.
    r.send(CtrlType.EnrollmentCertsResponse, encode(Schemas.EnrollmentCertsResponse, { clientCertPem: certs.chain.client, serverCertPem: certs.chain.server, caCertsPem: r.ctx.pki.caBundlePem }));
    r.server.log.info({ router: r.name, verify: !!req.requireVerification }, 'ctrl: signed renewed router certificates');
  } finally {
    r.extending = false;
  }
}
