// Fetching an external JWT signer's key set without becoming a proxy into the controller's own network.
// The JWKS URL is chosen by whoever can write signers, and the fetch runs from the controller's host:
// left open, it reaches loopback services, cloud metadata (169.254.169.254) and private subnets. So:
// the name is resolved once, every address it resolves to must be public unless the host is listed in
// `jwksPrivateHosts`, and the connection goes to the address that was checked (a second lookup could
// answer differently: DNS rebinding). Redirects are not followed; the answer must arrive within
// JWKS_TIMEOUT_MS and stay under JWKS_MAX_BYTES.
import dns from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net, { BlockList } from 'node:net';

export const JWKS_TIMEOUT_MS = 5_000;
export const JWKS_MAX_BYTES = 256 * 1024;

/** Addresses no JWKS fetch may reach unless its host is listed: loopback, private, link-local, and the like. */
const internal = new BlockList();
for (const [net4, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) internal.addSubnet(net4, bits, 'ipv4');
for (const [net6, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2001:db8::', 32]] as const) internal.addSubnet(net6, bits, 'ipv6');

/** True for an address a fetch on behalf of a signer must not reach by default. */
export function isInternalAddress(address: string): boolean {
  // An IPv4 address written as IPv6 (::ffff:127.0.0.1) is the IPv4 address.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return internal.check(mapped[1], 'ipv4');
  const family = net.isIP(address);
  if (!family) return true;
  return internal.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export class JwksFetchError extends Error {}

/** The hosts (as written in the URL, lower case) whose key sets may live on internal addresses. */
const listed = (host: string, allowed: string[]) => allowed.some((h) => h.toLowerCase().replace(/^\[|\]$/g, '') === host);

/** GET the key set at `url`, refusing internal addresses (unless allowed), redirects, slow and oversized answers. */
export async function fetchJwks(url: string, allowedPrivateHosts: string[]): Promise<unknown> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new JwksFetchError(`'${url}' is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new JwksFetchError(`${u.protocol} is not http or https`);
  const host = u.hostname.toLowerCase().replace(/^\[|\]$/g, '');
  const addresses = net.isIP(host) ? [{ address: host, family: net.isIP(host) }] : await lookupAll(host);
  if (!addresses.length) throw new JwksFetchError(`${host} resolves to no address`);
  if (!listed(host, allowedPrivateHosts)) {
    const bad = addresses.find((a) => isInternalAddress(a.address));
    if (bad) throw new JwksFetchError(`${host} resolves to ${bad.address}, an internal address: list the host in jwksPrivateHosts to allow it`);
  }
  const chosen = addresses[0];
  return new Promise((resolve, reject) => {
    const get = u.protocol === 'https:' ? https.get : http.get;
    const req = get(u, {
      // Connect to the address checked above, never to a second answer from DNS.
      lookup: (_name: string, opts: { all?: boolean }, cb: (...a: unknown[]) => void) =>
        opts?.all ? cb(null, [chosen]) : cb(null, chosen.address, chosen.family),
      headers: { accept: 'application/json' },
      timeout: JWKS_TIMEOUT_MS,
      agent: false,
    } as https.RequestOptions, (res) => {
      if (res.statusCode !== 200) {
        res.destroy();
        return reject(new JwksFetchError(`${u.host} answered ${res.statusCode} (redirects are not followed)`));
      }
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > JWKS_MAX_BYTES) {
        res.destroy();
        return reject(new JwksFetchError(`${u.host} sent ${declared} bytes, more than ${JWKS_MAX_BYTES}`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (d: Buffer) => {
        size += d.length;
        if (size > JWKS_MAX_BYTES) {
          res.destroy();
          reject(new JwksFetchError(`${u.host} sent more than ${JWKS_MAX_BYTES} bytes`));
          return;
        }
        chunks.push(d);
      });
      res.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new JwksFetchError(`${u.host} did not answer JSON`));
        }
      });
      res.on('error', reject);
    });
    // The whole exchange, not only each socket read, must fit in the time: a server trickling a byte a
    // second would otherwise hold the login for as long as it likes.
    const deadline = setTimeout(() => req.destroy(new JwksFetchError(`${u.host} did not answer within ${JWKS_TIMEOUT_MS} ms`)), JWKS_TIMEOUT_MS);
    req.on('timeout', () => req.destroy(new JwksFetchError(`${u.host} did not answer within ${JWKS_TIMEOUT_MS} ms`)));
    req.on('error', (e) => reject(e instanceof JwksFetchError ? e : new JwksFetchError(`${u.host}: ${e.message}`)));
    req.on('close', () => clearTimeout(deadline));
  });
}

async function lookupAll(host: string) {
  try {
    return await dns.lookup(host, { all: true, verbatim: true });
  } catch (e) {
    throw new JwksFetchError(`cannot resolve ${host}: ${(e as Error).message}`);
  }
}
