// Every top-level command: its name and one-line description for `ztc --help`, and a loader that
// imports what the command needs only when it runs. Loading all of them up front (the server, the
// resource models, the table renderer of the time, crypto libraries) made `ztc version` take a second and more.
// test/unit/cli-registry.test.ts checks that each description here is the loaded command's own.
import type { Command } from 'commander';

export interface CommandEntry {
  name: string;
  description: string;
  /** Usage words shown by the help before the command is loaded, e.g. '<url>'. */
  usage?: string;
  load: () => Promise<Command>;
}

/** A command generated from a resource declaration (through the CLI manifest), with optional create defaults. */
const resource = (plural: string, defaults: Record<string, unknown> = {}) => async () => {
  const [{ resourceCommand }, { cliResource }] = await Promise.all([import('./commands/resources.js'), import('./manifest.js')]);
  return resourceCommand(await cliResource(plural), defaults);
};

export const COMMANDS: CommandEntry[] = [
  { name: 'serve', usage: '[options]', description: 'run the controller: both Edge APIs over HTTPS on one port', load: async () => (await import('./commands/serve.js')).serveCommand() },
  {
    name: 'quickstart',
    usage: '[options]',
    description: 'start a controller with a demo network that carries traffic (an echo service and its policies, a host and a device identity with their enrollment JWTs) and log this CLI in',
    load: async () => (await import('./commands/quickstart.js')).quickstartCommand(),
  },
  { name: 'login', usage: '[options] [url]', description: 'log in to a controller and save the session as a profile (the controller CA is pinned)', load: async () => (await import('./commands/session.js')).loginCommand() },
  { name: 'logout', usage: '[options]', description: 'end the saved session and forget its token', load: async () => (await import('./commands/session.js')).logoutCommand() },
  { name: 'profile', description: 'saved logins: list them, show or change the current one, delete one', load: async () => (await import('./commands/profile.js')).profileCommand() },
  { name: 'version', usage: '[options]', description: 'versions of this program and of the controller', load: async () => (await import('./commands/version.js')).versionCommand() },
  {
    name: 'identity',
    description: 'Identities: the users, devices, services and routers that authenticate to the network',
    load: async () => {
      const [pki, network] = await Promise.all([import('./commands/pki.js'), import('./commands/network.js')]);
      const cmd = await pki.identityCommand();
      await network.addIdentityNetworkCommands(cmd);
      return cmd;
    },
  },
  { name: 'identity-type', description: 'Kinds of identity (Default, Router)', load: resource('identity-types') },
  { name: 'authenticator', description: 'Authenticators: the username/password or certificate an identity logs in with', load: resource('authenticators') },
  { name: 'ca', description: 'Third-party certificate authorities whose certificates may enroll and authenticate (after verification)', load: async () => (await import('./commands/pki.js')).caCommand() },
  {
    name: 'enrollment',
    description: 'Outstanding enrollments: one-time tokens (as JWTs) that let an identity obtain its certificate or password',
    load: async () => (await import('./commands/pki.js')).enrollmentCommand(),
  },
  {
    name: 'enroll',
    usage: '[options] <jwt-file>',
    description: 'enroll with an enrollment JWT: make a key and CSR (ott), or set a password (updb), and write an identity file',
    load: async () => (await import('./commands/pki.js')).enrollCommand(),
  },
  { name: 'auth-policy', description: 'Auth policies: which primary methods (cert, updb, ext-jwt) and secondary factors an identity needs', load: resource('auth-policies') },
  {
    name: 'external-jwt-signer',
    description: 'External JWT signers: identity providers whose JWTs may log identities in (method ext-jwt)',
    load: resource('external-jwt-signers', { enabled: true, audience: null }),
  },
  { name: 'api-session', description: 'API sessions: who is logged in, from where, and whether MFA is complete', load: resource('api-sessions') },
  { name: 'revocation', description: 'Revocations: a token, an API session or an identity whose tokens no longer count; what it names that is live ends at once', load: resource('revocations') },
  { name: 'token', description: 'API tokens for automation: long-lived, revocable, admin or read-only; shown once when created', load: async () => (await import('./commands/token.js')).tokenCommand() },
  { name: 'events', usage: '--follow [--type T] [options]', description: 'follow the controller\'s events as they happen: entity changes, logins, API sessions, sessions, enrollments, posture failures, failed TLS handshakes, routers, links, circuits, terminators', load: async () => (await import('./commands/events.js')).eventsCommand() },
  { name: 'audit', usage: '[--entity X] [--since 1d] [options]', description: 'who changed what, when: the stored events (entity changes, logins, enrollments, admin recovery, posture failures, sessions made and refused) of the retention window, newest first', load: async () => (await import('./commands/events.js')).auditCommand() },
  {
    name: 'metrics',
    usage: '[options] [name...]',
    description: "the controller's Prometheus metrics: requests, logins, enrollments, sessions, the data plane (those whose names start with NAME...)",
    load: async () => (await import('./commands/metrics.js')).metricsCommand(),
  },
  { name: 'mfa', description: 'TOTP MFA of the logged-in identity', load: async () => (await import('./commands/mfa.js')).mfaCommand() },
  { name: 'config-type', description: 'Config types: named JSON schemas that configs of the type must match (intercept.v1, host.v1, ...)', load: resource('config-types') },
  { name: 'config', description: 'Configs: data of a config type that services carry to tunnelers and SDKs', load: resource('configs') },
  { name: 'service', description: 'Services: what identities dial (connect to) and bind (host), with their configs', load: async () => (await import('./commands/network.js')).serviceCommand() },
  { name: 'edge-router', description: 'Edge routers: where clients connect to the network; enrolled with a one-time token', load: async () => (await import('./commands/network.js')).edgeRouterCommand() },
  { name: 'router', description: 'Routers: every router of the network, edge and transit; those created here are transit routers', load: resource('routers') },
  { name: 'edge-router-policy', description: 'Edge router policies: which identities may connect through which edge routers', load: resource('edge-router-policies', { semantic: 'AnyOf' }) },
  {
    name: 'service-edge-router-policy',
    description: 'Service edge router policies: which services may be reached through which edge routers',
    load: resource('service-edge-router-policies', { semantic: 'AnyOf' }),
  },
  {
    name: 'service-policy',
    description: 'Service policies: which identities may dial or bind which services, under which posture checks',
    load: resource('service-policies', { semantic: 'AnyOf' }),
  },
  { name: 'posture-check-type', description: 'Posture check types: what a posture check can ask of a client (OS, process, domain, MAC)', load: resource('posture-check-types') },
  {
    name: 'posture-check',
    description: 'Posture checks: conditions on the client device (OS, running processes, domain, MAC address, MFA) that service policies can require',
    load: resource('posture-checks'),
  },
  { name: 'terminator', description: "Terminators: the router, binding and address where a service's traffic leaves the network", load: resource('terminators') },
  { name: 'session', description: 'Sessions: permissions to dial or bind a service, each tied to an API session', load: resource('sessions') },
  { name: 'fabric', description: 'routers, links, circuits and terminators as the routers report them (the Fabric API)', load: async () => (await import('./commands/fabric.js')).fabricCommand() },
  { name: 'controller', description: "Controllers serving this network's database, with their API addresses and certificates", load: resource('controllers') },
  { name: 'admin', description: 'recover administrator access on the controller host: reset a password, create an admin', load: async () => (await import('./commands/admin.js')).adminCommand() },
  { name: 'policy-advisor', description: 'why an identity can or cannot dial or bind a service: policies, edge routers, enrollment, posture, MFA', load: async () => (await import('./commands/policy-advisor.js')).policyAdvisorCommand() },
  { name: 'pki', description: "certificates: the controller's and those it issued, and a CA to try third-party CA auth with", load: async () => (await import('./commands/pki-status.js')).pkiCommand() },
  {
    name: 'status',
    usage: '[options]',
    description: "the controller's version and health: when each of its own certificates renews, and warnings 30 days before one expires",
    load: async () => (await import('./commands/pki-status.js')).statusCommand(),
  },
  {
    name: 'export',
    usage: '[options]',
    description: 'write the whole network model (references by name, no ids, no secrets) as YAML, or JSON with -o json',
    load: async () => (await import('./commands/model.js')).exportCommand(),
  },
  {
    name: 'import',
    usage: '[options] <file>',
    description: 'make the controller match a model file from ztc export, in one transaction; prints the plan as a diff',
    load: async () => (await import('./commands/model.js')).importCommand(),
  },
  { name: 'db', description: 'database maintenance: snapshots and integrity checks', load: async () => (await import('./commands/db.js')).dbCommand() },
  {
    name: 'api',
    usage: '[options] <method> <path>',
    description: 'call any API operation: ztc api GET /identities/ID/services (paths are management ones unless they start with /edge/ or /fabric/; a name works where an id goes)',
    load: async () => (await import('./commands/api.js')).apiCommand(),
  },
];
