// The OpenAPI documents generated (by @fastify/swagger) from the route schemas of each API.
import YAML from 'yaml';
import { iso } from '../model/clock.js';
import { selfLink } from '../model/resource.js';

type DocFn = () => Record<string, unknown>;

export class SpecRegistry {
  private docs = new Map<string, { name: string; fn: DocFn }>();
  private readonly started = iso(new Date());

  add(id: string, name: string, fn: DocFn) {
    this.docs.set(id, { name, fn });
  }

  list() {
    return [...this.docs].map(([id, d]) => ({ id, name: d.name, _links: { ...selfLink('specs', id), spec: { href: `./specs/${id}/spec` } }, createdAt: this.started, updatedAt: this.started, tags: {} }));
  }

  document(id: string) {
    return this.docs.get(id)?.fn();
  }

  yaml(id: string) {
    return YAML.stringify(this.document(id));
  }
}
