// What the CLI needs to know of each resource declaration (names, columns, the create and patch
// schemas for flags, which flags name another entity), as plain JSON. `npm run build` writes it to
// dist/cli-manifest.json (scripts/cli-manifest.mjs) so a command starts without importing the
// model (TypeBox and the store take a quarter of a second to load); without that file it is
// built from the declarations themselves, which is also what the build does.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ResourceDecl } from '../model/resource.js';

export interface JsonSchema {
  type?: string | string[];
  anyOf?: JsonSchema[];
  const?: unknown;
  enum?: unknown[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

export interface CliResource {
  /** Singular, as in messages and command names ("edge router" → `edge-router`). */
  name: string;
  plural: string;
  description: string;
  ops: ResourceDecl['ops'];
  /** Has a unique name a person can use in place of the id. */
  named: boolean;
  columns: string[];
  create?: JsonSchema;
  patch?: JsonSchema;
  /** Flags (by property) that take the id, or the unique name, of an entity of another resource (its plural). */
  references: Record<string, string>;
  /** PATCH takes our role attribute and tag edits (model/set-edits.ts): resources with role attributes. */
  setEdits?: boolean;
  /** Flags of the list command that each add a condition to its filter. */
  listFlags?: Record<string, { help: string; filter: string }>;
  /** Where the role attributes of its kind are listed with their usage (2.1), for resources with role attributes. */
  roleAttributeUsage?: string;
}

export type Manifest = Record<string, CliResource>;

/** Properties that hold the id of another entity, whatever the resource. */
const REFERENCES: Record<string, string> = {
  identityId: 'identities',
  authPolicyId: 'auth-policies',
  caId: 'cas',
  configTypeId: 'config-types',
  serviceId: 'services',
  edgeRouterId: 'edge-routers',
  routerId: 'routers',
  transitRouterId: 'transit-routers',
  apiSessionId: 'api-sessions',
};
/**
 * `typeId` names a different resource in each. Not posture checks': their types are an enum the server
 * checks, and MFA is a type upstream takes without listing it at /posture-check-types.
 */
const TYPE_REFERENCES: Record<string, string> = { identities: 'identity-types' };

export function describeResource(decl: ResourceDecl): CliResource {
  const json = (s: unknown) => (s ? (JSON.parse(JSON.stringify(s)) as JsonSchema) : undefined);
  const create = json(decl.schemas.create);
  const patch = json(decl.schemas.patch);
  const props = new Set([...Object.keys(create?.properties ?? {}), ...Object.keys(patch?.properties ?? {})]);
  const references: Record<string, string> = {};
  for (const p of props) {
    const target = p === 'typeId' ? TYPE_REFERENCES[decl.plural] : REFERENCES[p];
    if (target) references[p] = target;
  }
  return { name: decl.name, plural: decl.plural, description: decl.description, ops: decl.ops, named: 'name' in decl.filterable, columns: decl.cli.columns, create, patch, references, setEdits: !!decl.roleAttributes && !!patch, ...(decl.cli.listFlags ? { listFlags: decl.cli.listFlags } : {}), ...(decl.roleAttributes ? { roleAttributeUsage: `/${decl.name.replace(/ /g, '-')}-role-attribute-usage` } : {}) };
}

// Literal imports: bundlers (esbuild for the executable, vite for the tests) follow only those.
const MODULES = () => [
  import('../model/resources/api-sessions.js'), import('../model/resources/api-tokens.js'), import('../model/resources/auth-policies.js'), import('../model/resources/authenticators.js'),
  import('../model/resources/cas.js'), import('../model/resources/configs.js'), import('../model/resources/controllers.js'),
  import('../model/resources/enrollments.js'), import('../model/resources/fabric.js'), import('../model/resources/external-jwt-signers.js'), import('../model/resources/identities.js'),
  import('../model/resources/identity-types.js'), import('../model/resources/policies.js'), import('../model/resources/posture-check-types.js'),
  import('../model/resources/posture-checks.js'), import('../model/resources/revocations.js'),
  import('../model/resources/routers.js'), import('../model/resources/services.js'), import('../model/resources/sessions.js'),
  import('../model/resources/terminators.js'),
];

/** From the declarations themselves: every exported ResourceDecl of src/model/resources. */
export async function buildManifest(): Promise<Manifest> {
  const out: Manifest = {};
  for (const mod of (await Promise.all(MODULES())) as Record<string, unknown>[]) {
    for (const v of Object.values(mod)) {
      const d = v as Partial<ResourceDecl>;
      if (d && typeof d === 'object' && typeof d.plural === 'string' && d.schemas && d.cli) out[d.plural] = describeResource(d as ResourceDecl);
    }
  }
  return out;
}

export const MANIFEST_FILE = 'cli-manifest.json';

let loaded: Promise<Manifest> | undefined;

function readManifest(): Manifest | undefined {
  const embedded = (globalThis as { __ztcAssets?: Record<string, string> }).__ztcAssets?.[MANIFEST_FILE];
  if (embedded) return JSON.parse(embedded) as Manifest;
  // dist/src/cli/manifest.js → dist/cli-manifest.json
  const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..', MANIFEST_FILE);
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
}

/** The manifest written at build time (or, in tests before a build, made from the declarations). */
export function manifest(): Promise<Manifest> {
  loaded ??= Promise.resolve(readManifest()).then((m) => m ?? buildManifest());
  return loaded;
}

export async function cliResource(plural: string): Promise<CliResource> {
  const r = (await manifest())[plural];
  if (!r) throw new Error(`no resource declaration for '${plural}'`);
  return r;
}
