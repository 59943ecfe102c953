// `ztc <resource> list|get|create|update|delete`, generated from the resource declarations:
// flags come from the create/patch schemas, table columns from the declaration.
import fs from 'node:fs';
import { InvalidArgumentError, Command, Option } from 'commander';
import type { CliResource, JsonSchema } from '../manifest.js';
import { print, parseFormat, progress } from '../output.js';
import { CliError, expectOk, openTransport, type Transport } from '../transport.js';
import { targetOptions, type CommonOpts } from './common.js';
import { requiredPatchFields, setEditFlags } from './set-edit-flags.js';

const API = '/edge/management/v1';
/** Rows per request when a command collects every page. */
const PAGE = 500;

type PropSchema = JsonSchema;

/** 'auth-policies' → 'auth policy'. */
const singular = (plural: string) => plural.replace(/ies$/, 'y').replace(/s$/, '').replace(/-/g, ' ');
const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
const camel = (s: string) => s.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

function kind(s: PropSchema): 'boolean' | 'number' | 'list' | 'map' | 'string' {
  const types = new Set<string>();
  const walk = (x: PropSchema) => {
    if (x.anyOf) x.anyOf.forEach(walk);
    if (Array.isArray(x.type)) x.type.forEach((t) => types.add(t));
    else if (x.type) types.add(x.type);
    else if (typeof x.const === 'string') types.add('string');
  };
  walk(s);
  if (types.has('boolean')) return 'boolean';
  if (types.has('integer') || types.has('number')) return 'number';
  if (types.has('array')) return 'list';
  if (types.has('object')) return 'map';
  return 'string';
}

function choices(s: PropSchema): string[] | undefined {
  const out = (s.anyOf ?? []).map((x) => x.const).filter((c): c is string => typeof c === 'string');
  return out.length ? out : undefined;
}

/** key=value,key2=value2 or a JSON object. */
function parseMap(text: string): Record<string, unknown> {
  if (text.trim().startsWith('{')) {
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch (e) {
      throw new CliError(`not valid JSON: ${(e as Error).message}`);
    }
  }
  return Object.fromEntries(
    text.split(',').filter(Boolean).map((pair) => {
      const i = pair.indexOf('=');
      if (i < 1) throw new CliError(`expected key=value, got '${pair}'`);
      const v = pair.slice(i + 1);
      return [pair.slice(0, i), v === 'true' ? true : v === 'false' ? false : v === 'null' ? null : v];
    }),
  );
}

/** `@path` reads a file (as curl does): `--cert-pem @ca.pem`. */
export function fileOrValue(raw: string): string {
  if (!raw.startsWith('@')) return raw;
  try {
    return fs.readFileSync(raw.slice(1), 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${raw.slice(1)}: ${(e as Error).message}`);
  }
}

/** A JSON value given on the command line (or in a file with @path). */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new CliError(`not valid JSON: ${(e as Error).message}`);
  }
}

/** The OS types upstream's posture checks name, in their spelling (accepted in any case). */
const OS_TYPES = ['Windows', 'WindowsServer', 'Android', 'iOS', 'Linux', 'macOS'];
function osType(raw: string): string {
  const t = OS_TYPES.find((o) => o.toLowerCase() === raw.trim().toLowerCase());
  if (!t) throw new CliError(`'${raw}' is not an OS type: use ${OS_TYPES.join(', ')}`);
  return t;
}

/**
 * Flags whose value is a list of objects (posture checks): a shorthand, or the JSON array itself
 * (`@file` reads it from a file). The syntax is what the help shows.
 */
const OBJECT_LISTS: Record<string, { syntax: string; help: string; separator?: string; item: (entry: string) => Record<string, unknown> }> = {
  operatingSystems: {
    syntax: 'os[:version...],...|json',
    help: `OS types (${OS_TYPES.join(', ')}), each with optional version constraints after colons: Linux:>=5.0.0,Windows:>=10.0.19041:<11, or a JSON array of {type, versions}`,
    item: (entry) => {
      const [type, ...versions] = entry.split(':').map((s) => s.trim());
      return { type: osType(type), versions: versions.filter(Boolean) };
    },
  },
  processes: {
    syntax: 'os:path,...|json',
    help: 'processes that must run, each as OS type and path: Windows:C:\\agent.exe,Linux:/usr/bin/agent, or a JSON array of {osType, path, hashes?, signerFingerprints?}',
    item: (entry) => {
      const i = entry.indexOf(':');
      if (i < 1 || i === entry.length - 1) throw new CliError(`expected OS:PATH (such as Linux:/usr/bin/agent), got '${entry}'`);
      return { osType: osType(entry.slice(0, i)), path: entry.slice(i + 1).trim() };
    },
  },
};

// A CA's claim rules (ztc's, ziti#827): SOURCE[.FIELD]~PATTERN[=>ATTRIBUTE], e.g. SAN_URI~^spiffe://corp/team/(.+)$=>team-$1, SUBJECT.OU~(.+)
OBJECT_LISTS.roleAttributeClaims = {
  syntax: 'SOURCE[.FIELD]~PATTERN[=>ATTR];...|json|@file',
  help: 'rules turning claims of the CA\'s certificates into role attributes, separated by ";": SAN_URI~^spiffe://corp.example/team/([a-z-]+)$=>team-$1;SUBJECT.OU~(.+)=>ou-$1 (sources SAN_URI, SAN_EMAIL, SAN_DNS, SUBJECT.<field>), or a JSON array of {source, field?, pattern, attribute?}',
  separator: ';',
  item: (entry) => {
    const m = /^([A-Z_]+)(?:\.([A-Za-z]+))?~(.+?)(?:=>(.+))?$/.exec(entry);
    if (!m) throw new CliError(`expected SOURCE[.FIELD]~PATTERN[=>ATTRIBUTE] (such as SAN_URI~^spiffe://corp/team/(.+)$=>team-$1), got '${entry}'`);
    return { source: m[1], ...(m[2] ? { field: m[2] } : {}), pattern: m[3], ...(m[4] ? { attribute: m[4] } : {}) };
  },
};

function parseObjectList(name: string, raw: string): unknown {
  const text = fileOrValue(raw).trim();
  if (text.startsWith('[') || text.startsWith('{')) {
    const v = parseJson(text);
    return Array.isArray(v) ? v : [v];
  }
  return text.split(OBJECT_LISTS[name].separator ?? ',').map((s) => s.trim()).filter(Boolean).map(OBJECT_LISTS[name].item);
}

function convert(k: ReturnType<typeof kind>, raw: unknown): unknown {
  if (k === 'string' && typeof raw === 'string') return fileOrValue(raw);
  if (k === 'boolean') return raw === true || raw === 'true' || (typeof raw === 'string' && parseBool('', raw));
  if (k === 'number') {
    const n = Number(raw);
    if (!Number.isFinite(n)) throw new CliError(`expected a number, got '${raw}'`);
    return n;
  }
  if (k === 'list' && String(raw).trim().startsWith('[')) return parseJson(String(raw));
  if (k === 'list') return String(raw).split(',').map((s) => s.trim()).filter(Boolean);
  if (k === 'map') return parseMap(fileOrValue(String(raw)));
  return raw;
}

/**
 * Add one flag per schema property; returns a reader that turns parsed options into a request body.
 * Flags that reference another entity (`--identity-id`) take its id or its unique name.
 */
function schemaFlags(cmd: Command, schema: JsonSchema, skip: string[], references: Record<string, string> = {}, defaulted: string[] = []) {
  const props = Object.entries(schema.properties ?? {}).filter(([name]) => !skip.includes(name));
  // Required by the schema and not filled in by the CLI: commander refuses the command before any request.
  const required = new Set((schema.required ?? []).filter((r) => !defaulted.includes(r)));
  for (const [name, s] of props) {
    const k = kind(s);
    const flag = `--${kebab(name)}`;
    const what = references[name] ? `the id or name of the ${singular(references[name])}` : `set ${name}`;
    const objects = k === 'list' ? OBJECT_LISTS[name] : undefined;
    const opt =
      objects
        ? new Option(`${flag} <${objects.syntax}>`, objects.help)
        : k === 'boolean'
        ? new Option(`${flag} [bool]`, `set ${name}: true|false|yes|no|1|0 (true when given alone)`).argParser((v) => parseBool(flag, v))
        : new Option(`${flag} <${k === 'list' ? 'a,b' : k === 'map' ? 'k=v,...|json' : 'value'}>`, what);
    // Choices in any case (--type bind), without upstream's placeholder 'Invalid' (never a thing to pick).
    const c = choices(s)?.filter((x) => x !== 'Invalid');
    if (c?.length) {
      // What the choices mean, when the schema says (identity types: three are stored as Default).
      if (typeof s.description === 'string' && !references[name]) opt.description = `${what}: ${s.description}`;
      opt.choices(c);
      opt.argParser((v: string) => {
        const match = c.find((x) => x.toLowerCase() === v.trim().toLowerCase());
        if (!match) throw new InvalidArgumentError(`Allowed choices are ${c.join(', ')}.`);
        return match;
      });
    }
    if (required.has(name)) {
      opt.makeOptionMandatory();
      opt.description = `(required) ${opt.description}`;
    }
    cmd.addOption(opt);
  }
  return async (opts: Record<string, unknown>, t: Transport) => {
    const body: Record<string, unknown> = {};
    for (const [name, s] of props) {
      const v = opts[camel(kebab(name))];
      if (v === undefined) continue;
      try {
        body[name] = kind(s) === 'list' && OBJECT_LISTS[name] ? parseObjectList(name, String(v)) : convert(kind(s), v);
      } catch (e) {
        throw new CliError(`--${kebab(name)}: ${(e as Error).message}`);
      }
      if (references[name] && typeof body[name] === 'string') body[name] = await resolveRef(t, references[name], body[name] as string, `--${kebab(name)}`);
    }
    return body;
  };
}

export async function withTransport<T>(opts: CommonOpts, fn: (t: Transport) => Promise<T>): Promise<T> {
  const t = await openTransport(opts, progress);
  try {
    return await fn(t);
  } finally {
    await t.close();
  }
}

/** The id of an entity of `plural` given its id or its unique name. */
export async function resolveRef(t: Transport, plural: string, ref: string, what?: string): Promise<string> {
  const direct = await t.request('GET', `${API}/${plural}/${encodeURIComponent(ref)}`);
  if (direct.status === 200) return ref;
  const filter = `name = "${ref.replace(/["\\]/g, '\\$&')}"`;
  const found = await t.request('GET', `${API}/${plural}?filter=${encodeURIComponent(filter)}&limit=2`);
  const one = singular(plural);
  // Resources without names answer the filter with 400: then only the id could have matched.
  const rows = found.status === 200 ? ((found.json?.data as { id: string }[]) ?? []) : [];
  if (rows.length === 1) return rows[0].id;
  if (found.status !== 200 && found.status !== 400) expectOk(found, `Looking up ${one} '${ref}'`);
  const prefix = what ? `${what}: ` : '';
  throw new CliError(rows.length ? `${prefix}more than one ${one} is named '${ref}': use its id` : `${prefix}no ${one} has the id or name '${ref}': see \`ztc ${one.replace(/ /g, '-')} list\``);
}

/**
 * For a table: the columns declared `path@plural[/field]` hold ids of another resource; show their
 * names (or that field), with one request per column for the whole page, under the column's label.
 * An id whose entity is not found shows as the id when names are asked for, and not at all otherwise.
 */
export async function namesForIds<T>(t: Transport, rows: T[], columns: string[]): Promise<T[]> {
  const { at, parseColumn } = await import('../table.js');
  let out = rows;
  for (const c of columns.map(parseColumn)) {
    if (!c.ref) continue;
    const { plural, field } = c.ref;
    const source = c.paths[0];
    const idsOf = (r: T) => ([] as unknown[]).concat((r as Record<string, unknown>)[source] ?? []).filter((x): x is string => typeof x === 'string');
    // From the rows as the API gave them: an earlier column may have put names where the ids were.
    const ids = [...new Set(rows.flatMap(idsOf))];
    const found = new Map<string, unknown>();
    for (let i = 0; i < ids.length; i += PAGE) {
      const chunk = ids.slice(i, i + PAGE);
      const q = new URLSearchParams({ filter: `id in [${chunk.map((id) => JSON.stringify(id)).join(',')}]`, limit: String(chunk.length) });
      const reply = await t.request('GET', `${API}/${plural}?${q}`);
      if (reply.status !== 200) continue; // a name is a nicety: the id still says which one
      for (const r of (reply.json?.data as Record<string, unknown>[]) ?? []) {
        const v = at(r, field);
        if (v !== undefined && v !== null) found.set(String(r.id), v);
      }
    }
    const shown = (id: string) => found.get(id) ?? (field === 'name' ? id : undefined);
    out = out.map((r, i) => {
      const v = (rows[i] as Record<string, unknown>)[source];
      if (v === undefined || v === null) return r;
      const resolved = Array.isArray(v) ? v.flatMap((id) => [shown(String(id))].flat().filter((x) => x !== undefined)) : shown(String(v));
      return { ...r, [c.label]: resolved };
    });
  }
  return out;
}

/** Accept an id or a unique name. */
export async function resolveId(t: Transport, decl: CliResource, ref: string): Promise<string> {
  if (!decl.named) {
    const direct = await t.request('GET', `${API}/${decl.plural}/${encodeURIComponent(ref)}`);
    if (direct.status === 200) return ref;
    throw new CliError(`No ${decl.name} has the id '${ref}': see \`ztc ${decl.name.replace(/ /g, '-')} list\``);
  }
  return resolveRef(t, decl.plural, ref).catch((e: Error) => {
    throw new CliError(e.message.charAt(0).toUpperCase() + e.message.slice(1));
  });
}

/**
 * A filter with more conditions: `extra` and-ed with the filter's condition, the filter's own `sort by`,
 * `skip` and `limit` kept at the end (found outside quoted strings).
 */
export function andFilter(filter: string | undefined, extra: string[]): string | undefined {
  if (!extra.length) return filter;
  const text = filter?.trim() ?? '';
  let quote = '';
  let tail = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (/\s/.test(c) || i === 0) {
      const rest = text.slice(i).trimStart().toLowerCase();
      if (/^(sort\s+by|skip|limit)\b/.test(rest)) {
        tail = i;
        break;
      }
    }
  }
  const condition = text.slice(0, tail).trim();
  return [[...extra, ...(condition ? [`(${condition})`] : [])].join(' and '), text.slice(tail).trim()].filter(Boolean).join(' ');
}

/** `list [filter]` for a resource at `base`: a page as a table, or every row as JSON/YAML for scripts. */
export function listCommand(command: Command, decl: Pick<CliResource, 'plural' | 'columns' | 'listFlags'>, base: string): Command {
  const flags = Object.entries(decl.listFlags ?? {});
  for (const [name, f] of flags) command.option(`--${name}`, f.help);
  return targetOptions(command)
    .argument('[filter]', 'filter expression, e.g. \'name contains "web"\' (docs/filters.md)')
    .option('--filter <expr>', 'the filter expression as an option, as upstream\'s CLI takes it')
    .option('--limit <n>', 'this many rows (the table shows 10 unless asked; -o json|yaml: all unless asked)')
    .option('--offset <n>', 'skip this many')
    .option('--all', 'every matching row, in the table too')
    .action(async (argument: string | undefined, opts: CommonOpts & { filter?: string; limit?: string; offset?: string; all?: boolean }) => {
      const format = parseFormat(opts.output);
      if (argument !== undefined && opts.filter !== undefined && argument !== opts.filter) throw new CliError('Two filters: give it once, as the argument or as --filter');
      const filter = andFilter(argument ?? opts.filter, flags.filter(([name]) => (opts as Record<string, unknown>)[camel(name)]).map(([, f]) => f.filter));
      // Scripts get every matching row (page after page) unless they ask for a window; people get a page.
      const everything = opts.all || (format !== 'table' && opts.limit === undefined && opts.offset === undefined);
      const page = (offset: number, limit?: string) => {
        const q = new URLSearchParams();
        if (filter) q.set('filter', filter);
        if (limit) q.set('limit', limit);
        if (offset) q.set('offset', String(offset));
        return q;
      };
      const { rows, p } = await withTransport(opts, async (t) => {
        const get = async (q: URLSearchParams) => {
          const body = expectOk(await t.request('GET', `${base}?${q}`), `Listing ${decl.plural}`);
          return { rows: (body?.data as unknown[]) ?? [], p: body?.meta?.pagination as { offset: number; totalCount: number } | undefined };
        };
        const fetched = await (async () => {
          if (!everything) return get(page(Number(opts.offset ?? 0), opts.limit));
          const all: unknown[] = [];
          for (;;) {
            const r = await get(page(all.length, String(PAGE)));
            all.push(...r.rows);
            if (!r.rows.length || !r.p || all.length >= r.p.totalCount) return { rows: all, p: r.p && { offset: 0, totalCount: r.p.totalCount } };
          }
        })();
        // Scripts get the API's rows as they are; people get names where the API gives ids.
        return format === 'table' ? { ...fetched, rows: await namesForIds(t, fetched.rows, decl.columns) } : fetched;
      });
      let footer: string | undefined;
      if (p) {
        footer = `${rows.length ? `${p.offset + 1}-${p.offset + rows.length}` : '0'} of ${p.totalCount}`;
        const next = Math.min(500, Math.max(50, rows.length * 5));
        if (p.offset + rows.length < p.totalCount) footer += `: --limit ${next}, --offset ${p.offset + rows.length} or --all for more`;
      }
      await print(rows, format, { columns: decl.columns, footer });
    });
}

/**
 * `role-attributes [filter]`: every role attribute of the kind, with how many entities carry it and how
 * many policies of each kind name it (GET /<kind>-role-attribute-usage); `--with-ids` lists who.
 */
export function roleAttributesCommand(command: Command, decl: Pick<CliResource, 'plural'>, url: string): Command {
  return targetOptions(command)
    .argument('[filter]', 'filter on the attribute (`id`), e.g. \'id contains "eu"\' (docs/filters.md)')
    .option('--filter <expr>', 'the filter expression as an option')
    .option('--with-ids', 'also the ids of the entities and policies behind each count')
    .action(async (argument: string | undefined, opts: CommonOpts & { filter?: string; withIds?: boolean }) => {
      const format = parseFormat(opts.output);
      if (argument !== undefined && opts.filter !== undefined && argument !== opts.filter) throw new CliError('Two filters: give it once, as the argument or as --filter');
      const q = new URLSearchParams();
      const filter = argument ?? opts.filter;
      if (filter) q.set('filter', filter);
      if (opts.withIds) q.set('withIds', 'true');
      const rows = await withTransport(opts, async (t) => (expectOk(await t.request('GET', `${url}${q.size ? `?${q}` : ''}`), `Listing the role attributes of ${decl.plural}`)?.data as { roleAttribute: string; usage: Record<string, { count: number; ids?: string[] }> }[]) ?? []);
      if (format !== 'table') return print(rows, format);
      const sources = [...new Set(rows.flatMap((r) => Object.keys(r.usage)))];
      const flat = rows.map((r) => ({ roleAttribute: r.roleAttribute, ...Object.fromEntries(sources.map((s) => [s, r.usage[s]?.ids?.length ? `${r.usage[s].count}: ${r.usage[s].ids!.join(' ')}` : String(r.usage[s]?.count ?? 0)])) }));
      await print(flat, format, { columns: ['roleAttribute', ...sources], footer: `${rows.length} role attribute${rows.length === 1 ? '' : 's'}` });
    });
}

/**
 * `defaults` fill required fields a person rarely wants to type (a function: computed per call).
 * `onCreated` may act on the new entity (e.g. write its enrollment JWT) and decide what is printed.
 */
export function resourceCommand(
  decl: CliResource,
  defaults: Record<string, unknown> | (() => Record<string, unknown>) = {},
  extend?: {
    createOptions?: (c: Command) => void;
    /** Checks of the create's own flags, before anything is created. */
    beforeCreate?: (opts: Record<string, unknown>) => void;
    onCreated?: (t: Transport, id: string, opts: Record<string, unknown>, note: string) => Promise<boolean>;
    /** The flag that writes onCreated's JWT to a file of any name, if there is one. */
    jwtFlag?: string;
  },
): Command {
  const noun = decl.name.replace(/ /g, '-');
  const cmd = new Command(noun).description(decl.description);
  const base = `${API}/${decl.plural}`;
  const has = (op: CliResource['ops'][number]) => decl.ops.includes(op);

  if (has('list')) listCommand(cmd.command('list').description(`list ${decl.plural} (optionally with a filter, e.g. 'name contains "web"')`), decl, base);
  if (decl.roleAttributeUsage) roleAttributesCommand(cmd.command('role-attributes').description(`the role attributes of ${decl.plural.replace(/-/g, ' ')} and of the policies naming them, with where each is used`), decl, `${API}${decl.roleAttributeUsage}`);
  if (has('get')) {
    targetOptions(cmd.command('get').description(`show one ${decl.name}`))
      .argument('<id-or-name>')
      .action(async (ref: string, opts: CommonOpts) => {
        const format = parseFormat(opts.output);
        const data = await withTransport(opts, async (t) => {
          const one = expectOk(await t.request('GET', `${base}/${encodeURIComponent(await resolveId(t, decl, ref))}`), `Reading ${decl.name} '${ref}'`)?.data;
          return format === 'table' && one ? (await namesForIds(t, [one], decl.columns))[0] : one;
        });
        await print(data, format);
      });
  }
  if (has('create') && decl.create) {
    const schema = decl.create;
    const named = 'name' in (schema.properties ?? {});
    const c = targetOptions(cmd.command('create').description(`create ${/^[aeiou]/.test(decl.name) ? 'an' : 'a'} ${decl.name}`));
    if (named) c.argument('<name>');
    const defaultKeys = Object.keys(typeof defaults === 'function' ? defaults() : defaults);
    const read = schemaFlags(c, schema, named ? ['name'] : [], decl.references, defaultKeys);
    extend?.createOptions?.(c);
    c.action(async (...args: unknown[]) => {
      const opts = (named ? args[1] : args[0]) as CommonOpts & Record<string, unknown>;
      // With onCreated, -o may name a FILE.jwt for it (identity create --enroll ott -o FILE.jwt, as upstream's CLI);
      // any other -o is a format, checked before anything is created.
      const fileOut = !!extend?.onCreated && !!jwtFileOf(opts.output, extend.jwtFlag);
      const format = fileOut ? 'table' : parseFormat(opts.output);
      extend?.beforeCreate?.(opts);
      await withTransport(opts, async (t) => {
        const body = { ...(typeof defaults === 'function' ? defaults() : defaults), ...(await read(opts, t)), ...(named ? { name: args[0] } : {}) };
        const reply = await t.request('POST', base, body);
        if (named && reply.status === 400 && /already exists \(id /.test(reply.json?.error?.message ?? '')) {
          // The name is taken: say what to type instead.
          throw new CliError(`${reply.json!.error!.message}: change it with \`ztc ${noun} update ${String(args[0])} ...\`, or choose another name`);
        }
        const created = expectOk(reply, `Creating ${decl.name}`);
        const data = created?.data as { id: string };
        // Say which values the CLI chose, so `identity create` without --type is no surprise.
        const chosen = Object.entries(body)
          .filter(([k, v]) => defaultKeys.includes(k) && opts[camel(kebab(k))] === undefined && k in (schema.properties ?? {}) && v !== null && typeof v !== 'object')
          .map(([k, v]) => `--${kebab(k)} ${String(v)}`);
        const note = chosen.length ? ` (not given, so: ${chosen.join(', ')})` : '';
        if (extend?.onCreated && (await extend.onCreated(t, data.id, opts, note))) return;
        if (format === 'table') process.stdout.write(`created ${decl.name} ${data.id}${note}\n`);
        else await print(data, format);
      });
    });
  }
  if (has('patch') && decl.patch) {
    const u = targetOptions(cmd.command('update').description(`change fields of ${/^[aeiou]/.test(decl.name) ? 'an' : 'a'} ${decl.name}`)).argument('<id-or-name>');
    // Fields upstream requires on a patch (a posture check's typeId) are taken from the entity when not given.
    const read = schemaFlags(u, decl.patch, [], decl.references, decl.patch.required ?? []);
    const readEdits = setEditFlags(u, decl);
    u.action(async (ref: string, opts: CommonOpts & Record<string, unknown>) => {
      parseFormat(opts.output);
      if (!Object.keys(opts).some((k) => !['dataDir', 'config', 'profile', 'output'].includes(k))) throw new CliError('Nothing to change: give at least one field flag (see --help)');
      await withTransport(opts, async (t) => {
        const body = { ...(await read(opts, t)), ...readEdits(opts) };
        const id = await resolveId(t, decl, ref);
        const missing = requiredPatchFields(decl, body);
        if (missing.length) {
          const current = expectOk(await t.request('GET', `${base}/${encodeURIComponent(id)}`), `Reading ${decl.name} '${ref}'`)?.data as Record<string, unknown>;
          for (const f of missing) body[f] = current?.[f];
        }
        expectOk(await t.request('PATCH', `${base}/${encodeURIComponent(id)}`, body), `Updating ${decl.name} '${ref}'`);
      });
      process.stdout.write(`updated ${decl.name} ${ref}\n`);
    });
  }
  if (has('delete')) {
    targetOptions(cmd.command('delete').description(`delete ${decl.plural.replace(/-/g, ' ')} by id or name (several at once), or every one a filter matches (--where)`))
      .argument('[id-or-name...]')
      .option('--where <filter>', `delete every ${decl.name} this filter matches, as \`ziti edge delete ... where\` (e.g. 'name contains "test"')`)
      .action(async (refs: string[], opts: CommonOpts & { where?: string }) => {
        if (!refs.length && !opts.where?.trim()) throw new CliError(`Which ${decl.name}? Give its id or name (several are fine), or --where FILTER`);
        await withTransport(opts, async (t) => {
          // Every name is resolved before anything is deleted: a typo deletes nothing.
          const targets: [label: string, id: string][] = [];
          for (const ref of refs) targets.push([ref, await resolveId(t, decl, ref)]);
          if (opts.where?.trim()) {
            for (let offset = 0; ; ) {
              const q = new URLSearchParams({ filter: opts.where, limit: String(PAGE), offset: String(offset) });
              const body = expectOk(await t.request('GET', `${base}?${q}`), `Listing ${decl.plural}`);
              const rows = (body?.data as { id: string; name?: string }[]) ?? [];
              for (const r of rows) if (!targets.some(([, id]) => id === r.id)) targets.push([r.name ?? r.id, r.id]);
              offset += rows.length;
              const total = (body?.meta?.pagination as { totalCount?: number } | undefined)?.totalCount ?? 0;
              if (!rows.length || offset >= total) break;
            }
            if (!targets.length) return void process.stdout.write(`no ${decl.name} matches: nothing deleted\n`);
          }
          const failed: string[] = [];
          for (const [label, id] of targets) {
            const r = await t.request('DELETE', `${base}/${encodeURIComponent(id)}`);
            if (r.status >= 200 && r.status < 300) process.stdout.write(`deleted ${decl.name} ${label}\n`);
            else {
              try {
                expectOk(r, `Deleting ${decl.name} '${label}'`);
              } catch (e) {
                failed.push((e as Error).message);
              }
            }
          }
          if (failed.length) throw new CliError(targets.length === 1 ? failed[0] : `${failed.length} of ${targets.length} not deleted:\n${failed.join('\n')}`);
        });
      });
  }
  return cmd;
}

/** A boolean flag's value in any of the usual spellings; anything else is refused (never a silent false). */
export function parseBool(flag: string, v: string): boolean {
  const t = v.trim().toLowerCase();
  if (['true', 'yes', 'y', '1', 'on'].includes(t)) return true;
  if (['false', 'no', 'n', '0', 'off'].includes(t)) return false;
  throw new InvalidArgumentError(`${flag ? `${flag} takes` : 'expected'} true or false (or yes/no, 1/0), not '${v}'`);
}

/**
 * `-o` is the output format (table, json, yaml, in any case); a value ending in .jwt names the file for
 * an enrollment JWT, as in upstream's `ziti edge create identity NAME -o FILE.jwt`. Anything else is
 * refused, so `-o kiosk.json` never becomes a JWT file named like an output format.
 */
export function jwtFileOf(output: unknown, jwtFlag?: string): string | undefined {
  if (output === undefined || output === null || output === '') return undefined;
  const v = String(output);
  if (/\.jwt$/i.test(v)) return v;
  if (['table', 'json', 'yaml'].includes(v.toLowerCase())) return undefined;
  throw new CliError(`-o takes an output format (table, json or yaml) or a FILE.jwt for the enrollment JWT, not '${v}'${jwtFlag ? `: to write the JWT to ${v}, use ${jwtFlag} ${v}` : ''}`);
}
