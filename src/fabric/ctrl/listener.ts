// The control channel's listener (default port 6262): upstream OpenZiti routers (`ziti router run`) dial
// it with their enrolled certificates (mutual TLS, ALPN ziti-ctrl), are known by the fingerprint of that
// certificate and the router id their hello names, and are then kept in step: their peers (to link
// with), API sessions (full on connect, then every change within a second), ended sessions; the network
// (network.ts) routes their terminators and circuits.
import { createHash, randomUUID, type X509Certificate } from 'node:crypto';
import type tls from 'node:tls';
import type { Ctx } from '../../model/context.js';
import { apiSessionsForRouters, claimRouterLeases, releaseRouterLease, routerAccessLost, routerForCtrl, sealedApiSessionIds, setRouterLease, setRouterProtocols, stillLive, type SyncedApiSession } from '../../model/data-plane.js';
import { revokeRouterless } from '../../model/policy/enforce.js';
import { chainsTo, presentedCertificates } from '../../model/pki/client-certs.js';
import { enrollRouterByCa, routerEnrollmentCas } from '../../model/pki/router-enroll.js';
import type { Channel } from '../channel/channel.js';
import { bool, FRAME_LIMITS, i32, message, str, type Message } from '../channel/codec.js';
import { ListenerGuard } from '../channel/guard.js';
import { closeChannelListener, listenForChannels } from '../channel/listener.js';
import { groupedResultHeaders, readGroupedHello, UnderlayGroups, type UnderlayGroup } from '../channel/grouped.js';
import { ContentType, Header } from '../channel/messages.js';
import { decode, encode } from '../channel/protobuf.js';
import type { FabricLog } from '../fabric.js';
import { routersAllowed, setRouterHello } from '../../model/fabric-state.js';
import { routerEvent } from '../events.js';
import type { CircuitRecorder } from '../recorder.js';
import { CONTROLLER_CAPABILITIES, CONTROLLER_CAPABILITIES_V2, CtrlHeader, CtrlType, hasCapability, LINK_MANAGEMENT, PeerState, RouterCapability, Schemas } from './messages.js';
import { RouterNetwork, type EndedUse } from './network.js';
import type { StaticTerminators } from '../static-terminators.js';
import { RouterDataModelSender } from '../rdm/sender.js';
import { RouterConn, type RouterHello } from './router-connection.js';

export interface CtrlOptions {
  host: string;
  port: number;
  certPem: string;
  keyPem: string;
  caPem: string;
  helloTimeoutMs: number;
  maxPerAddress: number;
  /** Our hello's version header: Version|Revision|BuildDate|OS|Arch. */
  version: string;
  controllerId: string;
}

const SYNC_MS = 1000;
/** How often the CAs marked for router enrollment are read again (a CA verified or marked just now lets its routers in within this). */
const ENROLLING_CAS_MS = 2000;
const LEASE_MS = 30_000;
const CHUNK = 100;
/** API sessions checked for liveness each second (see nextSlice). */
const LIVENESS_SLICE = 5000;
/** How far back each second's look for new API sessions reaches, and how often all ids are compared. */
const LOOKBACK_MS = 30_000;
const RECONCILE_MS = 60_000;
/** How long after removing an API session from a 1.x router it is added back (see dropUses). */
const READD_MS = 300;
/** The longest a router's peers wait to hear of it when it says nothing after its hello. */
const PEER_WAIT_MS = 5000;
/**
 * One router, one connection (see accept): a connection heard from this recently is up, and a second
 * one for its router is refused at once; one silent longer is sent a heartbeat first, and replaced only
 * when nothing comes back within PROBE_MS. Upstream routers send a heartbeat at least every 10 s.
 */
const HEARD_MS = 5000;
const PROBE_MS = 3000;
/** How long an API-session heartbeat (every 60 s from upstream routers) counts its identity as connected. */
const HEARTBEAT_TTL_MS = 150_000;
/** Refused second connections of one router are logged once per this long (upstream's routerConnectChurnLimit). */
const DUPLICATE_LOG_MS = 60_000;

export class CtrlServer {
  readonly routers = new Map<string, RouterConn>();
  /**
   * The live API sessions routers are told of (id -> token and fingerprints), kept in step every second:
   * a connecting router's full sync is sent from here, not read and unsealed again for each router.
   */
  private known = new Map<string, SyncedApiSession>();
  private byToken = new Map<string, string>();
  private newest = '';
  private timers: NodeJS.Timeout[] = [];
  private syncing = false;
  /** A sync was asked for while one ran: another follows it. */
  private again = false;
  /** What identities may use changed: the next sync also checks each use's router access. */
  private routerCheck = false;
  private catchingUp: Promise<void> = Promise.resolve();
  private cursor = 0;
  private reconciledAt = Date.now();
  /** Heartbeats out to connections asked whether they are still up, one at a time per connection. */
  private probes = new WeakMap<RouterConn, Promise<boolean>>();
  /** Per router id: the episode of refused second connections (when it was logged, how many since). */
  private duplicates = new Map<string, { loggedAt: number; refused: number }>();
  /** Per router: the identities whose SDKs its ConnectEvents say are connected to it (2.x routers). */
  private connectedTo = new Map<string, Set<string>>();
  /** Identities whose API sessions a router's heartbeat named (1.x routers send no ConnectEvents), until when. */
  private heartbeatsUntil = new Map<string, number>();
  /** The lease (routers.onlineUntil) this controller last wrote for each router connected here (see lease). */
  private leases = new Map<string, string>();
  /** The grouped channels (2.x routers) open here, one underlay each (channel/grouped.ts). */
  private groups = new UnderlayGroups();
  /** The verified CAs marked for router enrollment (ztc's, ziti#1390), read every few seconds: a router with their certificate may say hello. */
  private enrollingCas: X509Certificate[] = [];
  server?: tls.Server;
  network!: RouterNetwork;
  /** The control port's limits on frames in progress, and its counts (closed, refused) for the metrics. */
  readonly guard = new ListenerGuard('ctrl', (x, msg) => this.log.warn(x, msg));
  /** The router data model 2.x routers subscribe to (../rdm/). */
  readonly rdm: RouterDataModelSender;

  constructor(
    readonly ctx: Ctx,
    readonly log: FabricLog,
    readonly recorder: CircuitRecorder,
    /** Router-side terminators: upstream routers dial those made for them (their binding's xgress). */
    readonly statics?: StaticTerminators,
  ) {
    this.rdm = new RouterDataModelSender(ctx, log);
  }

  idsOfTokens(tokens: string[]): string[] {
    const wanted = new Set(tokens);
    return [...wanted].map((t) => this.byToken.get(t)).filter((id): id is string => !!id);
  }

  async start(o: CtrlOptions): Promise<number> {
    this.network = new RouterNetwork(this.ctx, o.controllerId, this.routers, this.recorder, this.log, this.statics);
    const first = await apiSessionsForRouters(this.ctx);
    for (const s of first.sessions) this.remember(s);
    this.newest = first.newest;
    const server = await listenForChannels(
      {
        ...o,
        guard: this.guard,
        alpn: ['ziti-ctrl'],
        // The router's certificate must chain to our CA: then its fingerprint names the router. Or to a
        // verified CA marked for router enrollment: the hello then decides (enrollRouterByCa).
        admit: (socket) => !!socket.getPeerCertificate()?.raw && (socket.authorized || this.fromEnrollingCa(presentedCertificates(socket))),
      },
      ({ channel, hello, socket, accepted }) => void this.accept(channel, hello, createHash('sha1').update(socket.getPeerCertificate().raw).digest('hex'), o, accepted, socket.authorized ? [] : presentedCertificates(socket)),
      (e) => this.log.warn({ err: String(e) }, 'ctrl: listener error'),
    );
    this.server = server;
    await this.readEnrollingCas();
    this.timers.push(setInterval(() => void this.readEnrollingCas(), ENROLLING_CAS_MS));
    this.timers.push(setInterval(() => void this.sync(), SYNC_MS));
    this.timers.push(setInterval(() => void this.renewLeases(), LEASE_MS / 3));
    for (const t of this.timers) t.unref();
    this.rdm.start();
    return (server.address() as { port: number }).port;
  }

  private async readEnrollingCas() {
    this.enrollingCas = await routerEnrollmentCas(this.ctx).catch(() => this.enrollingCas);
  }

  private fromEnrollingCa(presented: X509Certificate[]): boolean {
    const now = this.ctx.clock.now();
    return !!presented[0] && this.enrollingCas.some((ca) => chainsTo(presented[0], presented, ca, now));
  }

  /** `presented`: the certificates of a connection admitted for a CA marked for router enrollment (none when they chain to ours). */
  private async accept(channel: Channel, hello: Message, fingerprint: string, o: CtrlOptions, accepted: () => void, presented: X509Certificate[] = []) {
    const routerId = hello.body.toString('utf8');
    const refuse = (why: string) => {
      this.log.info({ router: routerId, reason: why }, 'ctrl: refused a router');
      channel.close(new Error(why));
    };
    if (!hello.headers.has(Header.HelloVersion)) return refuse('the hello has no version header');
    let router = await routerForCtrl(this.ctx, routerId).catch(() => null);
    // A router the network does not know, with a certificate from a CA marked for router enrollment: created and enrolled now.
    if (!router && presented.length) {
      const made = await enrollRouterByCa(this.ctx, routerId, presented).catch((e: unknown) => ({ refused: `could not enroll it: ${String(e)}` }));
      if ('refused' in made) return refuse(made.refused);
      this.log.info({ router: made.name, id: made.id, ca: made.caId }, 'ctrl: enrolled a router by its certificate from a CA marked for router enrollment');
      router = await routerForCtrl(this.ctx, routerId).catch(() => null);
    }
    if (!router) return refuse('unknown router');
    if (!router.isVerified || !router.fingerprint) return refuse('the router has not finished enrollment');
    if (router.fingerprint.toLowerCase() !== fingerprint) return refuse('the certificate is not the router\'s enrolled certificate');
    if (router.disabled) return refuse('the router is disabled');
    if (channel.closed) return;
    // Its certificate is the router's: the hello deadline no longer applies (a probe below may take PROBE_MS).
    accepted();
    // A 2.x router's hello opens a grouped channel; one that would join a group is refused (grouped.ts).
    const grouped = readGroupedHello(hello);
    if (grouped && !grouped.first) return this.refuseHello(channel, hello, this.groups.refusal(grouped), router.name);
    // One router, one connection. A second connection for a router whose connection is up is refused
    // (a failed Result saying why, then closed) and the first carries on undisturbed: two routers
    // started with one certificate would otherwise replace each other many times a second, each
    // connect re-sending every API session. Upstream refuses too (within routerConnectChurnLimit of the
    // connect; after that it lets the newer one take over, which still swaps the two every minute).
    // The legitimate case is a router that restarted while its old TCP connection is half-dead (the
    // old socket's end not yet seen): so the old connection must show it is up. Heard from within
    // HEARD_MS, it is; else it is sent a heartbeat (every upstream router echoes one) and has PROBE_MS
    // for anything to arrive. Silent still, it is closed and the new connection takes its place. A
    // restarted router thus gets in on its first try, or on its next one (it retries) when the old
    // connection had spoken just before the restart.
    let previous: RouterConn | undefined;
    for (;;) {
      const current = this.routers.get(routerId);
      if (!current || current.closed) break;
      if (await this.answers(current)) return this.refuseDuplicate(channel, hello, router.name, current);
      if (channel.closed) return;
      // Another connection took its place while it was asked (or it closed): ask about that one.
      if (this.routers.get(routerId) !== current) continue;
      this.log.warn({ router: router.name, silent: addressOf(current.channel), connecting: addressOf(channel) }, 'ctrl: a router connected again while its connection was silent (no answer to a heartbeat): the new connection replaces it');
      previous = current;
      break;
    }
    channel.setLimits(FRAME_LIMITS);
    const conn = new RouterConn(this, routerId, router.name, channel, readHello(hello, !!grouped), router.fingerprint);
    const group: UnderlayGroup | undefined = grouped && this.groups.open(grouped);
    this.routers.set(routerId, conn);
    // Before anything is awaited: a 2.x router subscribes to the data model as soon as its hello is
    // answered, and a subscription from a router the sender does not know yet would be lost (the router
    // asks again only when it expires, five minutes later).
    if (conn.hello.v2) this.rdm.add(conn);
    // The terminators kept for it are its again at once (a dial from now on waits for them), then it is
    // asked which it still holds.
    const kept = this.network.restore(routerId).catch((e) => {
      this.log.warn({ err: String(e), router: router.name }, 'ctrl: could not read the terminators kept for a router');
      return [];
    });
    // After the swap: the old connection's close must not read as the router going away.
    if (previous) previous.channel.close(new Error('replaced by a new connection: it did not answer a heartbeat'));
    channel.attach({
      message: (m) => conn.handle(m),
      closed: () => {
        // Its one underlay closed: the logical channel ends with it (upstream's MinTotalUnderlays: 1).
        if (group) this.groups.close(group);
        this.rdm.remove(conn);
        conn.ended();
        this.log.info({ router: router.name }, 'ctrl: router disconnected');
        // Replaced by a newer connection: that one carries on.
        if (this.routers.get(routerId) !== conn) return;
        this.routers.delete(routerId);
        this.connectedTo.delete(routerId);
        routerEvent(this.ctx, routerId, false);
        // The router may connect again while this runs (a reroute waits up to ROUTE_TIMEOUT_MS for its
        // routers): the new connection's lease and its Healthy announcement stand, so each step after an
        // await first looks whether it is back.
        const back = () => this.routers.has(routerId);
        void (async () => {
          await this.network.routerGone(routerId);
          if (back()) return;
          await this.release(routerId);
          const exists = !!(await routerForCtrl(this.ctx, routerId));
          if (back()) return;
          this.peersChanged(conn, exists ? PeerState.Unhealthy : PeerState.Removed);
        })().catch((e) => this.log.warn({ err: String(e) }, 'ctrl: cleaning up after a router failed'));
      },
    });
    // A 2.x router reads our capabilities in 1002 (12 is the grouped channel's there; upstream sets both
    // to the same mask) and needs the group headers back; a 1.x router reads 12.
    const result = message(
      ContentType.Result,
      [
        [Header.ResultSuccess, bool(true)],
        [Header.HelloVersion, str(o.version)],
        [Header.Id, str(o.controllerId)],
        ...(grouped && group
          ? [...groupedResultHeaders(grouped, group), [CtrlHeader.CapabilitiesV2, CONTROLLER_CAPABILITIES_V2], [CtrlHeader.Capabilities, CONTROLLER_CAPABILITIES_V2]] as [number, Buffer][]
          : ([[Header.ConnectionId, str(randomUUID())], [CtrlHeader.Capabilities, CONTROLLER_CAPABILITIES]] as [number, Buffer][])),
      ],
      undefined,
      -1,
    );
    result.headers.set(Header.ReplyFor, i32(hello.seq));
    channel.send(result);
    this.log.info({ router: router.name, version: hello.headers.get(Header.HelloVersion)?.toString(), ...(grouped ? { grouped: grouped.type } : {}) }, 'ctrl: router connected');
    routerEvent(this.ctx, routerId, true);
    await this.lease(routerId).catch(() => {});
    await setRouterHello(this.ctx, routerId, conn.hello.listeners.map((l) => ({ address: String(l.address ?? ''), protocol: String(l.protocol ?? '') })), conn.hello.versionInfo, conn.hello.capabilitiesMask).catch(() => {});
    await this.network.refreshCosts().catch(() => {});
    // Its peers learn of it and it of them (routers dial their links themselves, section 2.7), once it is
    // up on its side: it answers ServerHello and reports its links at once; a router that says nothing
    // still gets there after a few seconds.
    void Promise.race([conn.ready, new Promise((r) => setTimeout(r, PEER_WAIT_MS).unref())]).then(() => {
      if (!conn.closed && this.routers.get(routerId) === conn) this.peersChanged(conn, PeerState.Healthy);
    });
    // Its edge listeners' addresses (what SDKs are given), then every live API session, in chunks. A 2.x
    // router is offered the router data model as upstream offers it (ServerHello data and header 1024),
    // and given the public keys at once (its edge listener takes no SDK without them); it subscribes next.
    const serverHello = conn.hello.v2
      ? message(CtrlType.ServerHello, [[CtrlHeader.RouterDataModel, bool(true)]], encode(Schemas.ServerHello, { version: o.version, data: { instant: 'true', routerModel: 'true' } }))
      : message(CtrlType.ServerHello, [], encode(Schemas.ServerHello, { version: o.version }));
    void channel
      .request(serverHello, 10_000)
      .then((reply) => this.clientHello(conn, reply))
      .catch(() => {});
    await this.fullSync(conn);
    if (conn.hello.v2) await this.rdm.sendKeys(conn).catch((e) => this.log.warn({ err: String(e), router: router.name }, 'ctrl: could not send the public keys'));
    void kept.then((terminators) => conn.validateTerminators(terminators)).catch((e) => this.log.warn({ err: String(e), router: router.name }, 'ctrl: terminator validation failed'));
  }

  /**
   * ConnectEvents (2.x routers): identities whose SDKs connected to or left the router; with fullState,
   * every identity connected there now. The router's own id is not an identity of ours (upstream skips it).
   */
  connectEvents(conn: RouterConn, body: { events: { identityId?: string; isConnected?: boolean }[]; fullState?: boolean }) {
    if (conn.closed || this.routers.get(conn.routerId) !== conn) return;
    let set = this.connectedTo.get(conn.routerId);
    if (!set || body.fullState) this.connectedTo.set(conn.routerId, (set = new Set()));
    for (const e of body.events) {
      if (!e.identityId || e.identityId === conn.routerId) continue;
      if (e.isConnected) set.add(e.identityId);
      else if (!body.fullState) set.delete(e.identityId);
    }
  }

  /** ApiSessionHeartbeat: the identities of these API sessions have SDKs connected to a router, for the next HEARTBEAT_TTL_MS. */
  heartbeat(tokens: string[]) {
    const until = Date.now() + HEARTBEAT_TTL_MS;
    for (const id of this.idsOfTokens(tokens)) {
      const identityId = this.known.get(id)?.identityId;
      if (identityId) this.heartbeatsUntil.set(identityId, until);
    }
  }

  /** Every identity connected to a router of this controller, as far as its routers say. */
  connectedIdentities(): Set<string> {
    const out = new Set<string>();
    for (const set of this.connectedTo.values()) for (const id of set) out.add(id);
    const now = Date.now();
    for (const [id, until] of this.heartbeatsUntil) {
      if (until < now) this.heartbeatsUntil.delete(id);
      else out.add(id);
    }
    return out;
  }

  /** RequestClientReSync: the router lost track of its API sessions (a chunk missing); it is sent them all again. */
  async resync(conn: RouterConn) {
    if (conn.closed || this.routers.get(conn.routerId) !== conn) return;
    this.log.info({ router: conn.name }, 'ctrl: the router asked for its API sessions again');
    await this.fullSync(conn);
    if (conn.hello.v2) await this.rdm.sendKeys(conn);
  }

  /**
   * Whether `conn` is up: heard from within HEARD_MS, or something arrives within PROBE_MS of a
   * heartbeat sent now. Concurrent askers share one heartbeat.
   */
  private answers(conn: RouterConn): Promise<boolean> {
    const ch = conn.channel;
    if (Date.now() - ch.lastReceivedAt < HEARD_MS) return Promise.resolve(true);
    const asking = this.probes.get(conn);
    if (asking) return asking;
    const before = ch.lastReceivedAt;
    const started = Date.now();
    const beat = Buffer.alloc(8);
    beat.writeBigUInt64LE(BigInt(started) * 1_000_000n);
    ch.send(message(ContentType.Heartbeat, [[Header.Heartbeat, beat]]));
    const probe = new Promise<boolean>((resolve) => {
      const look = setInterval(() => {
        const heard = ch.lastReceivedAt > before;
        if (!heard && !ch.closed && Date.now() - started < PROBE_MS) return;
        clearInterval(look);
        this.probes.delete(conn);
        resolve(heard && !ch.closed);
      }, 50);
    });
    this.probes.set(conn, probe);
    return probe;
  }

  /**
   * Refuse a second connection of a router whose connection `live` is up: a failed Result naming the
   * reason (what upstream's listener answers a refused hello with; the router logs it and retries
   * later), then closed. Logged once per DUPLICATE_LOG_MS and router, with both addresses.
   */
  private refuseDuplicate(channel: Channel, hello: Message, name: string, live: RouterConn) {
    const connected = addressOf(live.channel);
    const refused = addressOf(channel);
    const why = `router ${name} is already connected (from ${connected}): a second connection with its certificate is refused while the first is up`;
    this.answerHello(channel, hello, why);
    const now = Date.now();
    const episode = this.duplicates.get(live.routerId);
    if (episode && now - episode.loggedAt < DUPLICATE_LOG_MS) {
      episode.refused++;
      return;
    }
    for (const [id, e] of this.duplicates) if (now - e.loggedAt >= DUPLICATE_LOG_MS) this.duplicates.delete(id);
    this.duplicates.set(live.routerId, { loggedAt: now, refused: 1 });
    this.log.warn(
      { router: name, routerId: live.routerId, connected, refused, ...(episode ? { refusedSinceLastLogged: episode.refused } : {}) },
      'ctrl: refused a second connection of a router that is connected (are two routers running with one certificate?); the first stays. Further ones are refused for the next minute without a log line',
    );
  }

  /** A failed Result for a hello, saying why (the router logs it and dials again later), then a clean close. */
  private answerHello(channel: Channel, hello: Message, why: string) {
    const result = message(ContentType.Result, [[Header.ResultSuccess, bool(false)]], str(why), -1);
    result.headers.set(Header.ReplyFor, i32(hello.seq));
    channel.send(result);
    // A clean close: the Result is written before the socket ends.
    channel.close();
  }

  /** A hello refused for a reason of its own (not a duplicate): answered, closed and logged. */
  private refuseHello(channel: Channel, hello: Message, why: string, name: string) {
    this.log.info({ router: name, reason: why, from: addressOf(channel) }, 'ctrl: refused a router\'s hello');
    this.answerHello(channel, hello, why);
  }

  private async clientHello(conn: RouterConn, m: Message) {
    if (m.type !== CtrlType.ClientHello) return;
    const routerId = conn.routerId;
    const hello = decode(Schemas.ClientHello, m.body);
    const index = m.headers.get(CtrlHeader.RouterDataModelIndex);
    if (conn.hello.v2) this.log.info({ router: conn.name, version: String(hello.version ?? ''), routerModel: !!m.headers.get(CtrlHeader.RouterDataModel)?.[0], routerIndex: index?.length === 8 ? String(index.readBigUInt64LE(0)) : undefined }, 'ctrl: the router sent its edge hello');
    const protocols: Record<string, string> = {};
    let hostname = String(hello.hostname ?? '');
    for (const l of hello.listeners as { advertise?: { protocol?: string; hostname?: string; port?: number; value?: string } }[]) {
      const a = l.advertise;
      if (!a?.protocol || !a.hostname || !a.port) continue;
      protocols[a.protocol] ??= `${a.protocol}://${a.hostname}:${a.port}`;
      hostname ||= a.hostname;
    }
    if (Object.keys(protocols).length) await setRouterProtocols(this.ctx, routerId, protocols, hostname);
  }

  /**
   * Tell the other routers that `conn`'s router is up (with its link listeners), down or deleted; a router
   * that just came up is told of every other. Only routers that manage their own links are told.
   */
  /** ztc's embedded router, named to every router as a peer to link with (worker.ts sets it). */
  localPeer?: { id: string; version: string; listeners: { address: string; protocol: string; groups: string[] }[] };

  /** Told of every router that comes up or goes, as its peers are (ztc's router dials links: link/dial.ts). */
  peerChanged?: (conn: RouterConn, up: boolean) => void;

  private peersChanged(conn: RouterConn, state: number) {
    if (state === PeerState.Healthy) conn.announced = true;
    this.peerChanged?.(conn, state === PeerState.Healthy);
    // Only peers that are up on their side themselves: one that connected but has not spoken yet is
    // named to the others when it has (its own announcement), not earlier with this one's.
    const others = [...this.routers.values()].filter((c) => c !== conn && !c.closed && c.announced);
    const about = (c: RouterConn, s: number) => (s === PeerState.Healthy ? { id: c.routerId, version: c.hello.version, state: s, listeners: c.hello.listeners } : { id: c.routerId, state: s });
    for (const other of others) if (other.hello.managesLinks) other.send(CtrlType.PeerStateChanges, encode(Schemas.PeerStateChanges, { changes: [about(conn, state)] }));
    // ztc's own router is a peer of every router too (it takes links on its edge port: link/accept.ts).
    const peers = [...others.map((c) => about(c, PeerState.Healthy)), ...(this.localPeer ? [{ ...this.localPeer, state: PeerState.Healthy }] : [])];
    if (state === PeerState.Healthy && conn.hello.managesLinks && peers.length) conn.send(CtrlType.PeerStateChanges, encode(Schemas.PeerStateChanges, { changes: peers }));
  }

  private remember(s: SyncedApiSession) {
    this.known.set(s.id, s);
    this.byToken.set(s.token, s.id);
  }

  /**
   * Every live API session, as upstream's instant sync sends it: full state, in chunks of 100. From the
   * known set: at most a second behind the store, and the next second's sync sends what it lacked.
   */
  private async fullSync(conn: RouterConn) {
    // Up to now first (no routers were connected, so no second's sync ran): other routers get the new ones too.
    await this.catchUp().catch((e) => this.log.warn({ err: String(e) }, 'ctrl: could not read new API sessions'));
    const sessions = [...this.known.values()];
    conn.synced = true;
    const id = randomUUID();
    const chunks = Math.max(1, Math.ceil(sessions.length / CHUNK));
    for (let i = 0; i < chunks; i++) {
      const state = JSON.stringify({ id, isLast: i === chunks - 1, sequence: i });
      conn.channel.send(
        message(CtrlType.ApiSessionAdded, [[1013, str('instant')], [1014, str(state)]], encode(Schemas.ApiSessionAdded, { isFullState: true, apiSessions: sessions.slice(i * CHUNK, (i + 1) * CHUNK) })),
      );
    }
  }

  /**
   * API sessions made since the last look, added to the known set and sent to every connected router.
   * One at a time: a router's connect and the second's sync both call it.
   */
  private catchUp(): Promise<void> {
    this.catchingUp = this.catchingUp.catch(() => {}).then(async () => {
      // Looking back a while: a session whose transaction committed after a newer one's (or made on a
      // controller whose clock lags) has an older creation time than the newest already seen.
      const added = await apiSessionsForRouters(this.ctx, this.newest ? new Date(Date.parse(this.newest) - LOOKBACK_MS).toISOString() : undefined);
      let fresh = added.sessions.filter((s) => !this.known.has(s.id));
      if (added.newest > this.newest) this.newest = added.newest;
      // Now and then, by ids alone (no token opened): whatever even the look-back missed.
      if (Date.now() - this.reconciledAt > RECONCILE_MS) {
        this.reconciledAt = Date.now();
        const seen = new Set(fresh.map((s) => s.id));
        const missing = (await sealedApiSessionIds(this.ctx)).filter((id) => !this.known.has(id) && !seen.has(id));
        if (missing.length) fresh = [...fresh, ...(await apiSessionsForRouters(this.ctx, undefined, missing)).sessions];
      }
      for (const s of fresh) this.remember(s);
      // In chunks, as the full sync: a burst of logins is many small messages, never one unbounded one.
      // Not to a router whose full state is still to come: it holds these already.
      const conns = [...this.routers.values()].filter((c) => c.synced);
      for (let i = 0; i < fresh.length; i += CHUNK) {
        const body = encode(Schemas.ApiSessionAdded, { isFullState: false, apiSessions: fresh.slice(i, i + CHUNK) });
        for (const c of conns) c.send(CtrlType.ApiSessionAdded, body);
      }
    });
    return this.catchingUp;
  }

  /** Access changed somewhere (fabric/access-watch.ts): sync now, edge-router access included. */
  accessChanged() {
    this.routerCheck = true;
    void this.sync();
  }

  /** Every second: API sessions made since, those that ended, and service sessions the routers use that ended. */
  private async sync() {
    if (this.syncing) {
      this.again = true;
      return;
    }
    if (!this.routers.size) {
      this.routerCheck = false;
      return;
    }
    this.syncing = true;
    const routerCheck = this.routerCheck;
    this.routerCheck = false;
    try {
      await this.dropRemovedRouters();
      await this.claimLeases();
      await this.network.keepLinkRows();
      await this.catchUp();
      const conns = [...this.routers.values()];
      const sessionIds = [...new Set(this.network.sessionIds())];
      const checked = this.nextSlice();
      const live = await stillLive(this.ctx, checked, sessionIds);
      const gone = checked.filter((id) => !live.apiSessions.has(id) && this.known.has(id)).map((id) => [id, this.known.get(id)!.token] as const);
      for (const [id, token] of gone) (this.known.delete(id), this.byToken.delete(token));
      for (let i = 0; i < gone.length; i += CHUNK) {
        const some = gone.slice(i, i + CHUNK);
        const body = encode(Schemas.ApiSessionRemoved, { tokens: some.map(([, t]) => t), ids: some.map(([id]) => id) });
        for (const c of conns) c.send(CtrlType.ApiSessionRemoved, body);
      }
      const ended = new Set(sessionIds.filter((id) => !live.sessions.has(id)));
      if (ended.size) this.dropUses(await this.network.sessionsEnded(ended), conns);
      if (routerCheck) await this.checkRouterAccess();
    } catch (e) {
      if (routerCheck) this.routerCheck = true;
      this.log.warn({ err: String(e) }, 'ctrl: could not sync API sessions');
    } finally {
      this.syncing = false;
      if (this.again) {
        this.again = false;
        void this.sync();
      }
    }
  }

  /**
   * Circuits and terminators whose session may no longer use their router (an edge router policy or a
   * service edge router policy changed) end there; a session left with no router at all is revoked.
   */
  private async checkRouterAccess() {
    const lost = await routerAccessLost(this.ctx, this.network.sessionUses());
    if (!lost.size) return;
    for (const [key, s] of lost) this.log.info({ session: s.id, identity: s.identityId, service: s.serviceId, router: key.slice(key.indexOf('|') + 1) }, 'ctrl: edge-router access lost, ending what the session carried on that router');
    this.dropUses(await this.network.usesEnded(new Set(lost.keys())));
    await revokeRouterless(this.ctx, lost.values());
  }

  /**
   * Tell routers which session uses ended: SessionRemoved with the tokens and the session ids (a 2.x
   * router finds a JWT session by its id), to `everyone` or else to the routers of the uses. A 1.x router
   * ignores SessionRemoved for a token shaped like a JWT (ours are, for 2.x routers: it takes them for
   * bearer tokens it checked itself), so its SDK's channel is closed instead by removing the API session
   * there and adding it straight back: the SDK reconnects at once and keeps its other services.
   */
  private dropUses(uses: EndedUse[], everyone?: RouterConn[]) {
    if (!uses.length) return;
    const body = (list: EndedUse[]) => {
      const unique = [...new Map(list.map((u) => [u.token, u])).values()];
      return encode(Schemas.SessionRemoved, { tokens: unique.map((u) => u.token), ids: unique.map((u) => u.sessionId) });
    };
    if (everyone) for (const c of everyone) c.send(CtrlType.SessionRemoved, body(uses));
    const byRouter = new Map<string, EndedUse[]>();
    for (const u of uses) byRouter.set(u.routerId, [...(byRouter.get(u.routerId) ?? []), u]);
    for (const [routerId, list] of byRouter) {
      const conn = this.routers.get(routerId);
      if (!conn) continue;
      if (!everyone) conn.send(CtrlType.SessionRemoved, body(list));
      if (atLeast(conn.hello.version, [2, 0, 0])) continue;
      const sessions = [...new Set(list.filter((u) => looksLikeJwt(u.token)).map((u) => u.apiSessionId))].map((id) => this.known.get(id)).filter((s): s is SyncedApiSession => !!s);
      if (!sessions.length) continue;
      this.log.info({ router: conn.name, apiSessions: sessions.map((s) => s.id) }, 'ctrl: a 1.x router keeps JWT sessions: closing their SDKs\' channels there (they reconnect)');
      conn.send(CtrlType.ApiSessionRemoved, encode(Schemas.ApiSessionRemoved, { tokens: sessions.map((s) => s.token), ids: sessions.map((s) => s.id) }));
      // The router handles each message on a goroutine of its own: the add waits so it cannot land first.
      // A reconnecting SDK's hello waits for it at the router (lookupApiSessionTimeout, 5 s).
      setTimeout(() => {
        if (!conn.closed) conn.send(CtrlType.ApiSessionAdded, encode(Schemas.ApiSessionAdded, { isFullState: false, apiSessions: sessions.filter((x) => this.known.has(x.id)) }));
      }, READD_MS).unref();
    }
  }

  /** A router deleted or disabled through the API (on any controller) is disconnected, as upstream does. */
  private async dropRemovedRouters() {
    // Only the routers asked about: one that connected while the answer was coming (its hello checked
    // it already) is not in the answer, and was closed as if deleted (seen on PostgreSQL under load: a
    // router dropped right after its hello, its peers told it was unhealthy).
    const asked = [...this.routers.keys()];
    const allowed = await routersAllowed(this.ctx, asked);
    for (const id of asked) if (!allowed.has(id)) this.routers.get(id)?.channel.close(new Error('the router was deleted or disabled'));
  }

  /**
   * The API sessions whose liveness this second's sync checks: all of them up to LIVENESS_SLICE, else
   * the next slice in turn (100,000 sessions checked every second would be 200 queries a second; in
   * slices an ended session reaches the routers within known/LIVENESS_SLICE seconds).
   */
  private nextSlice(): string[] {
    const ids = [...this.known.keys()];
    if (ids.length <= LIVENESS_SLICE) return ids;
    if (this.cursor >= ids.length) this.cursor = 0;
    const slice = ids.slice(this.cursor, this.cursor + LIVENESS_SLICE);
    this.cursor += LIVENESS_SLICE;
    return slice;
  }

  private async renewLeases() {
    for (const id of this.routers.keys()) await this.lease(id).catch(() => {});
    await this.network.refreshCosts().catch(() => {});
  }

  /** The router is online until LEASE_MS from now, as this controller says. */
  private async lease(routerId: string) {
    const until = new Date(Date.now() + LEASE_MS);
    this.leases.set(routerId, until.toISOString());
    await setRouterLease(this.ctx, routerId, until);
  }

  /**
   * The router left this controller: its lease ends, unless another controller on the database (the
   * router lists several in its ctrl.endpoints) wrote it since, which keeps it online.
   */
  private async release(routerId: string) {
    const held = this.leases.get(routerId);
    this.leases.delete(routerId);
    if (held) await releaseRouterLease(this.ctx, routerId, held);
  }

  /**
   * Several controllers on one database (PostgreSQL): a router connected here whose lease another
   * controller ended (the router left that one, whose lease was the newer) is taken back within a second,
   * so it shows online while any controller holds it.
   */
  private async claimLeases() {
    if (this.ctx.store.dialect.name !== 'postgres' || !this.routers.size) return;
    const until = new Date(Date.now() + LEASE_MS).toISOString();
    const taken = await claimRouterLeases(this.ctx, [...this.routers.keys()], until);
    for (const id of taken) {
      this.leases.set(id, until);
      // It left while the claim ran: its close has released the lease already, or does so with this one.
      if (!this.routers.has(id)) await this.release(id);
    }
  }

  async stop() {
    for (const t of this.timers) clearInterval(t);
    this.rdm.stop();
    for (const c of [...this.routers.values()]) c.channel.close(new Error('the controller is stopping'));
    if (this.server) await closeChannelListener(this.server);
    for (const id of [...this.leases.keys()]) await this.release(id).catch(() => {});
  }
}

/** The peer's address and port, as logs show it. */
function addressOf(channel: Channel): string {
  const s = channel.socket;
  const host = s.remoteAddress ?? '?';
  return `${host.includes(':') ? `[${host}]` : host}:${s.remotePort ?? '?'}`;
}

/**
 * What a router's hello says of it: its version (header 4); a 1.x router its link listeners (10) and
 * metadata (11); a 2.x router (grouped, or RouterMultiChannel in its capabilities, 1002) its link
 * listeners in 1000, as upstream's controller tells the two apart. 2.x routers all manage their links.
 */
function readHello(hello: Message, grouped: boolean): RouterHello {
  const version = hello.headers.get(Header.HelloVersion)?.toString('utf8').split('|')[0] ?? '';
  const mask = hello.headers.get(CtrlHeader.CapabilitiesV2);
  const v2 = grouped || hasCapability(mask, RouterCapability.MultiChannel);
  let listeners: Record<string, unknown>[] = [];
  let capabilities: number[] = [];
  try {
    const l = hello.headers.get(v2 ? CtrlHeader.ListenersV2 : CtrlHeader.Listeners);
    if (l) listeners = decode(Schemas.Listeners, l).listeners as Record<string, unknown>[];
    const md = v2 ? undefined : hello.headers.get(CtrlHeader.RouterMetadata);
    if (md) capabilities = decode(Schemas.RouterMetadata, md).capabilities as number[];
  } catch {
    // A malformed optional header: the router is still let in, as one without links.
  }
  return { version, versionInfo: hello.headers.get(Header.HelloVersion)?.toString('utf8') ?? '', listeners, managesLinks: v2 || capabilities.includes(LINK_MANAGEMENT) || atLeast(version, [0, 32, 1]), v2, capabilitiesMask: mask?.length ? BigInt(`0x${mask.toString('hex')}`) : null };
}

/** How 1.x routers tell a bearer token (router/xgress_common IsBearerToken): 'ey' and exactly two dots. */
const looksLikeJwt = (token: string) => token.startsWith('ey') && token.split('.').length === 3;

/** Upstream's version rule: a development build (v0.0.0) or anything unparseable counts as new enough. */
function atLeast(version: string, min: number[]): boolean {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!m) return true;
  const v = m.slice(1, 4).map(Number);
  if (v.every((x) => x === 0)) return true;
  for (let i = 0; i < 3; i++) if (v[i] !== min[i]) return v[i] > min[i];
  return true;
}
