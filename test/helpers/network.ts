// A controller with its edge router over real TLS, and the REST steps every data-plane test needs:
// enrolled identities (real certificates), a service with Bind/Dial policies, service sessions.
import type { Config } from '../../src/config.js';
import { CLIENT, MGMT } from './controller.js';
import { ecCsr } from './certs.js';
import { startTlsController, type TlsController } from './tls.js';
import { CT, EdgePeer, H } from '../peers/edge-sdk.js';

export interface Member {
  id: string;
  name: string;
  cert: string;
  key: string;
  /** API session token of a certificate login. */
  token: string;
}

export interface TestNetwork {
  c: TlsController;
  admin: string;
  routerPort: number;
  routerId: string;
  identity(name: string, roles?: string[]): Promise<Member>;
  service(name: string, o?: { encryptionRequired?: boolean }): Promise<string>;
  session(who: Member, serviceId: string, type: 'Dial' | 'Bind'): Promise<string>;
  peer(who: Member): Promise<EdgePeer>;
  api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any; text: string }>;
  close(): Promise<void>;
}

export async function startNetwork(extra: Partial<Config> = {}, o: Parameters<typeof startTlsController>[1] = {}): Promise<TestNetwork> {
  const c = await startTlsController(extra, o);
  const admin = await c.login();
  const router = c.running.fabric!.edge!;
  const api = (method: string, path: string, body?: unknown, token = admin) => c.call(method, path.startsWith('/edge/') ? path : `${MGMT}${path}`, { token, body });
  // Everyone may use every router for every service; the service policies decide who dials and binds.
  await api('POST', '/edge-router-policies', { name: 'all', identityRoles: ['#all'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' });
  await api('POST', '/service-edge-router-policies', { name: 'all', serviceRoles: ['#all'], edgeRouterRoles: ['#all'], semantic: 'AnyOf' });
  const net: TestNetwork = {
    c,
    admin,
    routerPort: router.port,
    routerId: router.id,
    api,
    async identity(name, roles = []) {
      const made = await api('POST', '/identities', { name, type: 'Device', isAdmin: false, roleAttributes: roles, enrollment: { ott: true } });
      if (made.status !== 201) throw new Error(made.text);
      const ott = (await api('GET', `/identities/${made.body.data.id}`)).body.data.enrollment.ott;
      const { csrPem, keyPem } = ecCsr(name);
      const enrolled = await c.call('POST', `${CLIENT}/enroll/ott`, { body: { token: ott.token, clientCsr: csrPem } });
      if (enrolled.status !== 200) throw new Error(enrolled.text);
      const cert = enrolled.body.data.cert as string;
      const login = await c.call('POST', `${CLIENT}/authenticate?method=cert`, { cert, key: keyPem, body: {} });
      return { id: made.body.data.id, name, cert, key: keyPem, token: login.body.data.token };
    },
    async service(name, o = {}) {
      const r = await api('POST', '/services', { name, encryptionRequired: o.encryptionRequired ?? false, roleAttributes: [name] });
      await api('POST', '/service-policies', { name: `${name}-bind`, type: 'Bind', identityRoles: [`#${name}-hosts`], serviceRoles: [`#${name}`], semantic: 'AnyOf' });
      await api('POST', '/service-policies', { name: `${name}-dial`, type: 'Dial', identityRoles: [`#${name}-clients`], serviceRoles: [`#${name}`], semantic: 'AnyOf' });
      return r.body.data.id;
    },
    async session(who, serviceId, type) {
      const r = await c.call('POST', `${CLIENT}/sessions`, { token: who.token, body: { serviceId, type } });
      if (r.status !== 201) throw new Error(r.text);
      return r.body.data.token;
    },
    async peer(who) {
      const p = await EdgePeer.connect(router.port, { cert: who.cert, key: who.key });
      const result = await p.hello(who.token);
      if (result.type !== CT.Result || result.headers.get(H.ResultSuccess)?.[0] !== 1) throw new Error('hello refused');
      return p;
    },
    close: () => c.close(),
  };
  return net;
}
