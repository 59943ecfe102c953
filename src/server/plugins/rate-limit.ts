// Throttling with @fastify/rate-limit over a sliding window (sliding-window.ts): authentication and
// enrollment per client address, everything else that needs a session per API session. Counters are per process (in memory): behind a load
// balancer each controller enforces its own share, which is what stops a flood reaching one process.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { Config } from '../../config.js';
import { ApiError } from '../../model/errors.js';
import { SlidingWindowStore } from './sliding-window.js';

// Logging in, by the legacy API or through the OIDC provider (its authorize, login and token steps).
const isAuthentication = (url: string) => /\/(authenticate|enroll)(\/|$)|^\/oidc\/(authorize|login|oauth|revoke|end_session)(\/|$)/.test(url);

export async function registerRateLimits(app: FastifyInstance, config: Config) {
  // Runs before the plugin's own onRoute hook, so every route's limit is set when it reads it.
  app.addHook('onRoute', (r: RouteOptions) => {
    const access = (r.config as { access?: string } | undefined)?.access ?? 'admin';
    const auth = isAuthentication(r.url);
    const max = auth ? config.authRateLimitPerMinute : config.apiRateLimitPerMinute;
    if (!max || (access === 'public' && !auth)) return;
    r.config = {
      ...(r.config ?? {}),
      rateLimit: {
        max,
        timeWindow: 60_000,
        keyGenerator: auth ? (req: FastifyRequest) => `ip:${req.ip}` : (req: FastifyRequest) => String(req.headers['zt-session'] ?? req.headers.authorization ?? `ip:${req.ip}`),
      },
    } as never;
  });
  await app.register(rateLimit, {
    global: false,
    store: SlidingWindowStore as never,
    errorResponseBuilder: (_req, c) => new ApiError(429, 'RATE_LIMITED', `Too many requests: at most ${c.max} a minute ${c.ban ? '' : 'are allowed here'}; try again in ${c.after}`),
  });
}
