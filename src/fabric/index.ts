// The data plane, started by server/ (and nothing else): the embedded edge router. Uses model/ for
// everything persisted; model/ and store/ never import this room.
import os from 'node:os';
import type { Server } from 'node:tls';
import type { Ctx } from '../model/context.js';
import { removeRouterEdgeTerminators, setRouterLease } from '../model/data-plane.js';
import { embeddedCertDue, ensureEmbeddedRouter, type EmbeddedRouter } from '../model/embedded-router.js';
import { VERSION } from '../version.js';
import { ListenerGuard } from './channel/guard.js';
import { startEdgeListener } from './edge/listener.js';
import { channelContext, closeChannelListener } from './channel/listener.js';
import { Fabric, type FabricLog } from './fabric.js';
import { LinkAcceptor } from './link/accept.js';
import { LocalRouter } from './link/local-router.js';
import type { CircuitRecorder } from './recorder.js';
import type { StaticTerminators } from './static-terminators.js';

export interface RouterOptions {
  bind: string;
  port: number;
  /** The host name SDKs reach the router at (in its certificate and in supportedProtocols). */
  address: string;
  helloTimeoutMs: number;
  maxPerAddress: number;
  progress?: (s: string) => void;
  log: FabricLog;
  /** Where its circuits are written for the Fabric API. */
  recorder?: CircuitRecorder;
  /** Router-side terminators (those made for this router it serves itself). */
  statics?: StaticTerminators;
}

export interface EdgeRouter {
  router: EmbeddedRouter;
  fabric: Fabric;
  /** The router as a member of the mesh: its links, and its part of circuits across them. */
  mesh: LocalRouter;
  port: number;
  /** The edge port's limits on frames in progress, and its counts (closed, refused) for the metrics. */
  guard: ListenerGuard;
  /**
   * Re-issue its certificate when it is due or the intermediate changed (`now`, the controller's clock),
   * and serve it from the next handshake on: connections open keep theirs.
   */
  renewCertificate(now: number): Promise<void>;
  close(): Promise<void>;
}

/** How long a router's online lease lasts; refreshed at a third of it. */
const LEASE_MS = 30_000;

export async function startEdgeRouter(ctx: Ctx, o: RouterOptions): Promise<EdgeRouter> {
  // The port is known before the record is written: port 0 asks the OS for one.
  let router = await ensureEmbeddedRouter(ctx, { address: o.address, port: o.port || 3022, progress: o.progress });
  const fabric = new Fabric(ctx, router.id, o.log, o.recorder, o.statics);
  fabric.name = router.name;
  const removed = await removeRouterEdgeTerminators(ctx, router.id);
  if (removed) o.progress?.(`removed ${removed} terminator(s) left by a previous run of the router`);
  const guard = new ListenerGuard('edge', (x, msg) => o.log.warn(x, msg));
  // A router of the mesh: other routers dial their links to it on the edge port (link/).
  const mesh = new LocalRouter(fabric);
  const links = new LinkAcceptor(mesh);
  const server: Server = await startEdgeListener(fabric, {
    guard,
    links,
    host: o.bind,
    port: o.port,
    certPem: router.certPem,
    keyPem: router.keyPem,
    helloTimeoutMs: o.helloTimeoutMs,
    maxPerAddress: o.maxPerAddress,
    version: `v${VERSION}|ztc|${new Date(0).toISOString().slice(0, 10)}|${os.platform()}|${os.arch()}`,
  });
  const port = (server.address() as { port: number }).port;
  if (port !== (o.port || 3022)) router = await ensureEmbeddedRouter(ctx, { address: o.address, port });
  fabric.start();
  const lease = () => setRouterLease(ctx, router.id, new Date(Date.now() + LEASE_MS)).catch((e) => o.log.warn({ err: String(e) }, 'edge: could not renew the router lease'));
  await lease();
  const leaseTimer = setInterval(() => void lease(), LEASE_MS / 3);
  leaseTimer.unref();
  let closed = false;
  const edge: EdgeRouter = {
    router,
    async renewCertificate(now) {
      if (closed || !embeddedCertDue(ctx, { certPem: edge.router.certPem, id: edge.router.id, address: o.address, now })) return;
      const next = await ensureEmbeddedRouter(ctx, { address: o.address, port, now });
      if (closed || next.certPem === edge.router.certPem) return;
      server.setSecureContext(channelContext({ certPem: next.certPem, keyPem: next.keyPem }));
      edge.router = next;
      o.log.info({ router: next.name }, 'edge: serving the renewed router certificate');
    },
    fabric,
    mesh,
    port,
    guard,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(leaseTimer);
      fabric.stop();
      links.close();
      for (const l of [...mesh.forwarder.links.values()]) l.close();
      await closeChannelListener(server);
      await removeRouterEdgeTerminators(ctx, router.id).catch(() => {});
      await setRouterLease(ctx, router.id, null).catch(() => {});
    },
  };
  return edge;
}
