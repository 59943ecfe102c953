// RequestClientReSync: a router asks for every live API session again.
import type { CtrlRouter } from './router.js';

export function clientResync(r: CtrlRouter) {
  return r.server.resync(r);
}
