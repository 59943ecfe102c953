// The event model: one shape per kind of event, named and laid out as upstream OpenZiti's controller
// names them where it has the same event (entityChange, edge.apiSessions, edge.sessions,
// authentication), so tools written for its event files read ours. ztc adds enrollment and admin
// (recovery on the controller host), which upstream does not emit. Unlike upstream, no event ever carries a
// token: upstream's API-session and session events include the bearer token, which would make the
// events file a credential store.

/** Who did it: an identity through the APIs, or the controller itself (expiry sweeps, start-up). */
export interface Actor {
  identityId: string;
  identityName: string;
  /** The API session the request came with ('' for an API token or the CLI's local mode). */
  apiSessionId?: string;
  /** The API token the request came with (its id, never the token). */
  apiTokenId?: string;
  remoteAddress?: string;
  /** The HTTP method of the request. */
  method?: string;
  /** The CLI's local mode on the controller host (`ztc ... -d DIR`, `ztc admin`): the OS user and host. */
  local?: { osUser: string; host: string };
}

interface Base {
  namespace: string;
  /** The controller that emitted it (its host name and process). */
  event_src_id: string;
  timestamp: string;
}

export interface EntityChangeEvent extends Base {
  namespace: 'entityChange';
  eventId: string;
  eventType: 'created' | 'updated' | 'deleted';
  metadata: {
    author: { type: 'identity'; id: string; name: string } | { type: 'controller' };
    source: { type: 'rest' | 'local' | 'internal'; auth?: 'edge' | 'token'; remoteAddr?: string; method?: string; apiSessionId?: string; apiTokenId?: string; osUser?: string; host?: string };
    version: string;
  };
  /** The store's name of the entity kind, as upstream: services, identities, servicePolicies... */
  entityType: string;
  /** ztc's addition: the entity's id and name, so an audit query needs no look into the states. */
  entityId: string;
  entityName?: string;
  isParentEvent: false;
  /** The operation when it was not a plain create/update/delete (ztc's addition): disable, enable, remove-mfa. */
  action?: string;
  /** Secrets are never in a state (see redact.ts). */
  initialState: Record<string, unknown> | null;
  finalState: Record<string, unknown> | null;
}

export interface ApiSessionEvent extends Base {
  namespace: 'edge.apiSessions';
  /** refreshed, exchanged: a JWT API session's tokens renewed at /oidc/oauth/token (upstream's names). */
  event_type: 'created' | 'deleted' | 'refreshed' | 'exchanged';
  id: string;
  /** legacy: a zt-session token; jwt: opened through the OIDC provider (upstream's ApiSessionTypeJwt). */
  type: 'legacy' | 'jwt';
  identity_id: string;
  ip_address?: string;
  /** Why it ended (ztc's addition): logout, expired, deleted, mfa-failed, identity-disabled. */
  reason?: string;
}

/** An entity an access-log event names: its id and name. */
export interface Named {
  id: string;
  name: string;
}

/**
 * What granted access (ztc's addition, edge#227): the service policies of the session's type whose
 * enforced posture checks passed, those checks (report-only ones that passed too), and the edge router
 * policies and service edge router policies that give the identity and the service the routers offered
 * (a session) or the router the circuit came in by (a circuit).
 */
export interface GrantedBy {
  service_policies: Named[];
  posture_checks: (Named & { type: string })[];
  edge_router_policies: Named[];
  service_edge_router_policies: Named[];
  /** The routers a session offers (at most 25), or a circuit's ingress router. */
  edge_routers: Named[];
}

/** What a refused session request lacked, or what a session made lacks to be of use (no edge router). */
export interface Missing {
  code: 'NO_SERVICE_POLICY' | 'POSTURE_CHECKS_FAILING' | 'NO_EDGE_ROUTER_POLICY' | 'NO_SERVICE_EDGE_ROUTER_POLICY' | 'NO_COMMON_ROUTER';
  message: string;
  /** POSTURE_CHECKS_FAILING: each policy that would grant it, with its failing enforced checks. */
  policies?: (Named & { posture_checks: (Named & { type: string })[] })[];
}

export interface SessionEvent extends Base {
  namespace: 'edge.sessions';
  /** refused (ztc's addition): a session request a policy did not grant, with what was missing. */
  event_type: 'created' | 'deleted' | 'refused';
  session_type: string;
  /** The session ('' when refused). */
  id: string;
  api_session_id: string;
  identity_id: string;
  service_id: string;
  /** Why it ended, when the controller ended it (ztc's addition): access-lost: ... */
  reason?: string;
  /** ztc's additions on created and refused (the access log, edge#227): names, what granted it, what was missing. */
  identity_name?: string;
  service_name?: string;
  granted_by?: GrantedBy;
  missing?: Missing[];
}

export interface AuthenticationEvent extends Base {
  namespace: 'authentication';
  event_type: 'success' | 'fail';
  /** The method: password (upstream's updb), cert, ext-jwt, as the request named it. */
  type: string;
  authenticator_id: string;
  identity_id: string;
  /** The username a password login named (ztc's addition; never the password). */
  username?: string;
  remote_address: string;
  success: boolean;
  reason: string;
  /**
   * Why a login failed, in a word from a small set (ztc's addition, ziti#1834; the label of
   * ztc_logins_failed_total): unknown-credential, wrong-password, locked, identity-disabled,
   * method-not-allowed, no-certificate, certificate-expired, certificate-untrusted, invalid-token,
   * wrong-mfa-code, mfa-not-enrolled, throttled, invalid-request, other. The client's answer never says it.
   */
  failure?: string;
}

export interface EnrollmentEvent extends Base {
  namespace: 'enrollment';
  event_type: 'success' | 'fail';
  method: string;
  /** The identity whose enrollment it was ('' when the request never named one: an unknown token). */
  identity_id: string;
  /** The router, for a router's enrollment or certificate extension (ztc's addition). */
  router_id?: string;
  remote_address: string;
  reason: string;
}

export interface AdminEvent extends Base {
  namespace: 'admin';
  /** The recovery done on the controller host: password-reset, admin-created. */
  event_type: string;
  identity_id: string;
  identity_name: string;
  username: string;
  os_user: string;
  host: string;
}

/** A router's control channel came up or went down (upstream's fabric.routers). */
export interface RouterEvent extends Base {
  namespace: 'fabric.routers';
  event_type: 'router-online' | 'router-offline';
  router_id: string;
  router_online: boolean;
}

/** A link routers reported, or its end (upstream's fabric.links). */
export interface LinkEvent extends Base {
  namespace: 'fabric.links';
  event_type: 'connected' | 'fault' | 'duplicate' | 'removed';
  link_id: string;
  src_router_id: string;
  dst_router_id: string;
  protocol: string;
  dial_address: string;
  cost: number;
}

/** A circuit routed, moved to another path, or ended (upstream's fabric.circuits). */
export interface CircuitEvent extends Base {
  namespace: 'fabric.circuits';
  /** failed: a dial that made no circuit (fabric/dial-failures.ts), with its cause. */
  event_type: 'created' | 'pathUpdated' | 'deleted' | 'failed';
  circuit_id: string;
  client_id: string;
  service_id: string;
  terminator_id: string;
  /** Routers (ingress first) and the links between them. */
  path: { nodes: string[]; links: string[] };
  link_count: number;
  /** How long the set-up took, ns (created only). */
  creation_timespan?: number;
  /** failed only: upstream's cause (NO_TERMINATORS, NO_PATH, ROUTER_ERR_...) or ztc's (ACCESS_DENIED, INVALID_SESSION...), and what the SDK was told. */
  failure_cause?: string;
  failure_reason?: string;
  /** ztc's addition (edge#227): the dialing session, and what granted it at its ingress router. */
  session_id?: string;
  granted_by?: GrantedBy;
}

/** A terminator a hosting SDK's Bind made on a router, or its end (upstream's fabric.terminators). */
export interface TerminatorEvent extends Base {
  namespace: 'fabric.terminators';
  event_type: 'created' | 'deleted';
  terminator_id: string;
  service_id: string;
  router_id: string;
  host_id: string;
}

/**
 * A session request whose posture checks failed (ztc's addition, ziti#2095): `denied`, the session was
 * refused (every granting policy has a failing enforced check); `reported`, it was granted and only
 * report-only checks failed, so it would have been refused were they enforced. The checks that failed,
 * the policies they belong to; never the device's reported values (the identity's failed service
 * requests hold those).
 */
export interface PostureEvent extends Base {
  namespace: 'posture';
  event_type: 'denied' | 'reported';
  identity_id: string;
  api_session_id: string;
  service_id: string;
  service_name: string;
  session_type: string;
  /** The session made despite the report-only failures (reported only). */
  session_id?: string;
  policies: { id: string; name: string }[];
  checks: { id: string; name: string; type: string; report_only: boolean }[];
}

/**
 * A failed TLS handshake on one of the controller's ports (ztc's addition, ziti#1834): the API port,
 * the embedded edge router's (edge) or the control port (ctrl). Failures of one port, address and reason
 * within 10 s after one is told are folded into one event (`count`); model/events/tls-failures.ts.
 */
export interface TlsEvent extends Base {
  namespace: 'tls';
  event_type: 'handshake-failed';
  listener: 'api' | 'edge' | 'ctrl';
  remote_address: string;
  /** timeout, disconnected, not-tls, no-common-protocol, no-common-alpn, client-alert, refused-certificate, other. */
  reason: string;
  /** Node's error code (ERR_SSL_TLSV1_ALERT_UNKNOWN_CA...), when there was one. */
  error?: string;
  /** How many failures this event tells (1, or those folded since the last). */
  count: number;
}

/**
 * The controller's own certificates (ztc's addition, ziti#1155, #1994, #4116; model/pki/renewal.ts):
 * `renewed`, one was replaced while serving (its renewal time came, an operator asked, or another
 * controller of the database renewed the shared intermediate), with the new signing key's kid when the
 * server certificate changed (re-announced to routers and in every JWKS; the previous one stays until
 * its tokens expire); `renewal-failed`, a renewal was tried and did not happen (retried at the next
 * check); `key-dropped`, a replaced signing key was withdrawn, nothing it signed being valid any more;
 * `expiring`, a certificate that does not renew by itself (the root) or whose renewal keeps failing is
 * close to its end (said once a day).
 */
export interface PkiEvent extends Base {
  namespace: 'pki';
  event_type: 'renewed' | 'renewal-failed' | 'key-dropped' | 'expiring';
  /** server, intermediate, root, edge-router (the embedded router's, on the edge port), signing-key, or data-plane (its thread could not take them up). */
  certificate: string;
  /** renewed: due (its renewal time came), operator (ztc pki renew), adopted (another controller's intermediate), files (pki/ changed on disk). */
  reason?: string;
  /** SHA-256 of the new certificate (renewed) or of the one concerned. */
  fingerprint?: string;
  previous_fingerprint?: string;
  not_after?: string;
  /** When the new certificate renews in its turn. */
  renews_at?: string;
  /** The signing key's kid (renewed server: the new one; key-dropped: the one withdrawn). */
  kid?: string;
  previous_kid?: string;
  /** renewal-failed: what went wrong. */
  error?: string;
}

export type ZtcEvent = EntityChangeEvent | ApiSessionEvent | SessionEvent | AuthenticationEvent | EnrollmentEvent | AdminEvent | RouterEvent | LinkEvent | CircuitEvent | TerminatorEvent | PostureEvent | TlsEvent | PkiEvent;

/**
 * The names `--type` and `?types=` take: upstream's subscription types (its config's `type:`), and the
 * namespaces themselves.
 */
export const EVENT_TYPES: Record<string, ZtcEvent['namespace']> = {
  entityChange: 'entityChange',
  apiSession: 'edge.apiSessions',
  'edge.apiSessions': 'edge.apiSessions',
  session: 'edge.sessions',
  'edge.sessions': 'edge.sessions',
  authentication: 'authentication',
  enrollment: 'enrollment',
  admin: 'admin',
  router: 'fabric.routers',
  'fabric.routers': 'fabric.routers',
  link: 'fabric.links',
  'fabric.links': 'fabric.links',
  circuit: 'fabric.circuits',
  'fabric.circuits': 'fabric.circuits',
  terminator: 'fabric.terminators',
  'fabric.terminators': 'fabric.terminators',
  posture: 'posture',
  tls: 'tls',
  pki: 'pki',
};

/** The namespaces a list of type names selects (empty: all); unknown names are an error for the caller to report. */
export function namespacesOf(types: string[]): { namespaces: Set<string>; unknown: string[] } {
  const namespaces = new Set<string>();
  const unknown: string[] = [];
  for (const t of types) {
    const ns = EVENT_TYPES[t];
    if (ns) namespaces.add(ns);
    else unknown.push(t);
  }
  return { namespaces, unknown };
}

/** The event's kind (created, fail, ...), whichever spelling its namespace uses. */
export const kindOf = (e: ZtcEvent): string => ('eventType' in e ? e.eventType : e.event_type);
