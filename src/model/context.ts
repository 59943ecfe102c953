import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import type { Clock } from './clock.js';
import type { Pki } from './pki/pki.js';
import type { Sealer } from './secrets.js';
import type { Events } from './events/hub.js';
import type { Actor } from './events/types.js';

/** What model code needs from the running controller. No HTTP in here. */
export interface Ctx {
  store: Store;
  clock: Clock;
  config: Config;
  pki: Pki;
  /** Seals the secrets the controller must read back (model/secrets.ts). */
  sealer: Sealer;
  /** Where events go (model/events/hub.ts): the events file, the audit table, the live stream. */
  events: Events;
  /**
   * Who the current request acts as, for the events its writes emit. Set on a per-request copy of the
   * context (server/actor.ts); absent for the controller's own work (sweeps, start-up).
   */
  actor?: Actor;
  /**
   * An enrollment request's note of whose enrollment it is, filled in once its token (or certificate)
   * names an identity or router: the enrollment event says whose it was (server/enrollment-events.ts).
   */
  enrolling?: { identityId?: string; routerId?: string };
  /**
   * Set on a copy of the context for the controller's own writes to what it keeps in line by itself (a
   * tunneler-enabled router's identity and system policy, model/resources/router-identities.ts): the
   * guards that refuse those changes from the API let these through.
   */
  system?: boolean;
}

/** Who is calling: resolved from the API session by the auth plugin. */
export interface Principal {
  identityId: string;
  identityName: string;
  isAdmin: boolean;
  /** Reads what an admin reads, changes nothing (the admin_readonly permission, or a read-only API token). */
  readOnlyAdmin: boolean;
  /** The identity's entity permissions (model/permissions.ts), checked on admin routes when it is no admin. */
  permissions?: readonly string[];
  apiSessionId: string;
  /** The API token the request came with (its id), when it came with one. */
  apiTokenId?: string;
  /** The CLI's local mode (the in-process administrator on the controller host). */
  local?: boolean;
  token: string;
}
