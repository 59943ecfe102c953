// EnrollmentExtendRouterVerifyRequest: the router holds the certificates it was sent.
import { message, type Message } from '../../channel/codec.js';
import { decode, encode } from '../../channel/protobuf.js';
import { fingerprintOf } from '../../../model/pki/certs.js';
import { CtrlType, Schemas } from '../messages.js';
import type { CtrlRouter } from './router.js';
import { adopt } from './common.js';

/** The fingerprint of a PEM's first certificate (the leaf of a chain); '' for what is no certificate. */
function leafFingerprint(pem: string): string {
  try {
    return fingerprintOf(pem);
  } catch {
    return '';
  }
}

/** The router holds the renewed certificates: they become its own, answered with an empty Error (upstream's success). */
export async function verifyCerts(r: CtrlRouter, m: Message) {
  const answer = (code = '', text = '') => r.channel.reply(m, message(CtrlType.Error, [], encode(Schemas.EdgeErrorBody, { code, message: text })));
  const { clientCertPem } = decode(Schemas.EnrollmentExtendRouterVerifyRequest, m.body);
  if (!clientCertPem) return answer('MISSING_CLIENT_PEM', 'request did not contain a client certificate PEM');
  const pending = r.extension;
  if (!pending) return answer('INVALID_ROUTER_STATE', 'the router has no outstanding certificate renewal');
  // Upstream's router sends back the PEM it was sent (the chain); its first certificate must be the one signed.
  if (leafFingerprint(String(clientCertPem)) !== pending.certs.client.fingerprint) return answer('INVALID_CLIENT_PEM', 'the certificate is not the one signed for this renewal');
  try {
    await adopt(r, pending.certs);
  } catch (e) {
    return answer('VERIFY_ERROR', (e as Error).message);
  }
  r.extension = undefined;
  answer();
}
