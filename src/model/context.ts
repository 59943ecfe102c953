import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import type { Clock } from './clock.js';
import type { Pki } from './pki/pki.js';
import type { Sealer } from './secrets.js';

/** What model code needs from the running controller. No HTTP in here. */
export interface Ctx {
  store: Store;
  clock: Clock;
  config: Config;
  pki: Pki;
  /** Seals the secrets the controller must read back (model/secrets.ts). */
  sealer: Sealer;
}

/** Who is calling: resolved from the API session by the auth plugin. */
export interface Principal {
  identityId: string;
  identityName: string;
  isAdmin: boolean;
  /** Reads what an admin reads, changes nothing (the admin_readonly permission, or a read-only API token). */
  readOnlyAdmin: boolean;
  apiSessionId: string;
  token: string;
}
