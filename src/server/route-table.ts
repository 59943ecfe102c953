// Every registered route, kept for the 405 answer (which methods a path does take) and for tests
// that must visit every route without a hand-kept list.
import type { FastifyInstance, RouteOptions } from 'fastify';
import { checkPublic } from './public-routes.js';

export interface RouteEntry {
  method: string;
  url: string;
  access: string;
  pattern: RegExp;
}

export class RouteTable {
  readonly routes: RouteEntry[] = [];

  attach(app: FastifyInstance) {
    app.addHook('onRoute', (r: RouteOptions) => {
      const methods = Array.isArray(r.method) ? r.method : [r.method];
      // A trailing wildcard (/zac/*) matches the rest of the path.
      const escaped = r.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:\w+/g, '[^/]+').replace(/\\\*$/, '.*');
      for (const method of methods) {
        if (method === 'HEAD' || method === 'OPTIONS') continue;
        const access = (r.config as { access?: string } | undefined)?.access ?? 'admin';
        checkPublic(method, r.url, access);
        this.routes.push({ method, url: r.url, access, pattern: new RegExp(`^${escaped}/?$`) });
      }
    });
  }

  methodsFor(path: string): string[] {
    return [...new Set(this.routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
  }
}
