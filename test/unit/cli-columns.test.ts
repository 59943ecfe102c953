// Every column a resource declares for the CLI's tables must name a field its detail has, and every
// `@plural` a resource the CLI knows: a renamed field would otherwise leave an empty column.
import { describe, expect, it } from 'vitest';
import { buildManifest } from '../../src/cli/manifest.js';
import { parseColumn, renderTable } from '../../src/cli/table.js';
import type { ResourceDecl } from '../../src/model/resource.js';

type Schema = { properties?: Record<string, Schema>; anyOf?: Schema[]; allOf?: Schema[]; oneOf?: Schema[]; items?: Schema };

/** Whether `path` (a.b.c) is a field of the schema, through unions and intersections. */
function hasPath(s: Schema | undefined, path: string[]): boolean {
  if (!s) return false;
  if (!path.length) return true;
  const alternatives = [...(s.anyOf ?? []), ...(s.allOf ?? []), ...(s.oneOf ?? [])];
  if (alternatives.some((a) => hasPath(a, path))) return true;
  const next = s.properties?.[path[0]];
  return !!next && hasPath(next, path.slice(1));
}

const modules = import.meta.glob<Record<string, unknown>>('../../src/model/resources/*.ts', { eager: true });
const decls = Object.values(modules).flatMap((m) => Object.values(m)).filter((d): d is ResourceDecl => !!d && typeof d === 'object' && 'cli' in d && 'schemas' in d);

describe('table columns of the resource declarations', () => {
  it('name fields of the detail, and resources the CLI knows', async () => {
    const manifest = await buildManifest();
    const plurals = new Set(Object.values(manifest).map((r) => r.plural));
    expect(decls.length).toBeGreaterThan(15);
    for (const d of decls) {
      for (const spec of d.cli.columns) {
        const c = parseColumn(spec);
        // At least one alternative is a field; an enrollment is for an identity or a router.
        expect(c.paths.some((p) => hasPath(d.schemas.detail as Schema, p.split('.'))), `${d.plural}: ${spec}`).toBe(true);
        if (c.ref) expect(plurals.has(c.ref.plural), `${d.plural}: ${spec}`).toBe(true);
      }
    }
  });

  it('show references and roles by name, under short headers', () => {
    const rows = [
      { id: 'p1', identityRolesDisplay: [{ role: '#staff', name: '#staff' }, { role: '@Xy1', name: '@laptop-01' }], edgeRouter: { id: 'r1', name: 'er-1', _links: {} } },
      { id: 'p2', identityRolesDisplay: [], identity: { id: 'i1', name: 'ana-laptop', _links: {} } },
    ];
    const out = renderTable(rows, ['id', 'identityRolesDisplay', 'for=identity.name|edgeRouter.name'], 200).split('\n');
    expect(out[0]).toMatch(/^ID\s+IDENTITY ROLES\s+FOR$/);
    expect(out[1]).toMatch(/^p1\s+#staff, @laptop-01\s+er-1$/);
    expect(out[2]).toMatch(/^p2\s+ana-laptop$/);
  });

  it("show a field of every item of a list: a router's listener addresses", () => {
    const rows = [{ id: 'r1', listenerAddresses: [{ address: 'tls:a.example:6004', protocol: 'tls' }, { address: 'tls:b.example:6004', protocol: 'tls' }] }, { id: 'r2', listenerAddresses: [] }];
    const out = renderTable(rows, ['id', 'listeners=listenerAddresses.address'], 200).split('\n');
    expect(out[0]).toMatch(/^ID\s+LISTENERS$/);
    expect(out[1]).toMatch(/^r1\s+tls:a\.example:6004, tls:b\.example:6004$/);
    expect(out[2]).toMatch(/^r2\s*$/);
  });

  it('cut long cells to the terminal width with …', () => {
    const rows = [{ id: 'a1', name: 'x'.repeat(50), roleAttributes: ['one', 'two', 'three', 'four', 'five', 'six'] }];
    const out = renderTable(rows, ['id', 'name', 'roleAttributes'], 40).split('\n');
    for (const line of out) expect(line.length).toBeLessThanOrEqual(40);
    expect(out[1]).toMatch(/x…\s+one, two.*…$/);
  });
});
