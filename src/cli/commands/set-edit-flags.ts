// `update --add-role-attributes eu --remove-role-attributes us --add-tags k=v --remove-tags k`: the
// server's PATCH extension (model/set-edits.ts), so the change is made against the current lists in one
// transaction instead of being read here and written back whole.
import { Command, Option } from 'commander';
import type { CliResource } from '../manifest.js';
import { CliError } from '../errors.js';

/** Comma lists, and the flag may be repeated. */
const collect = (v: string, prev: string[] = []) => [...prev, ...v.split(',').map((s) => s.trim()).filter(Boolean)];

/** key=value pairs; a bare `true`/`false`/`null` value becomes that JSON value, as --tags does. */
function tagPairs(items: string[]): Record<string, unknown> {
  return Object.fromEntries(
    items.map((pair) => {
      const i = pair.indexOf('=');
      if (i < 1) throw new CliError(`--add-tags: expected key=value, got '${pair}'`);
      const v = pair.slice(i + 1);
      return [pair.slice(0, i), v === 'true' ? true : v === 'false' ? false : v === 'null' ? null : v];
    }),
  );
}

/** Adds the flags to an update command; returns a reader turning parsed options into body fields. */
export function setEditFlags(cmd: Command, decl: CliResource): (opts: Record<string, unknown>) => Record<string, unknown> {
  if (!decl.setEdits) return () => ({});
  cmd.addOption(new Option('--add-role-attributes <a,b>', 'add these role attributes, keeping the others').argParser(collect));
  cmd.addOption(new Option('--remove-role-attributes <a,b>', 'remove these role attributes, keeping the others').argParser(collect));
  cmd.addOption(new Option('--add-tags <k=v,...>', 'set these tags, keeping the others').argParser(collect));
  cmd.addOption(new Option('--remove-tags <k,...>', 'remove the tags with these names, keeping the others').argParser(collect));
  return (opts) => {
    const body: Record<string, unknown> = {};
    if (opts.addRoleAttributes) body.roleAttributesAdd = opts.addRoleAttributes;
    if (opts.removeRoleAttributes) body.roleAttributesRemove = opts.removeRoleAttributes;
    if (opts.addTags) body.tagsAdd = tagPairs(opts.addTags as string[]);
    if (opts.removeTags) body.tagsRemove = opts.removeTags;
    if (('roleAttributes' in opts && opts.roleAttributes !== undefined) && (body.roleAttributesAdd || body.roleAttributesRemove)) {
      throw new CliError('Give either --role-attributes (the whole list) or --add-/--remove-role-attributes, not both');
    }
    if (opts.tags !== undefined && (body.tagsAdd || body.tagsRemove)) throw new CliError('Give either --tags (the whole map) or --add-/--remove-tags, not both');
    return body;
  };
}

/**
 * Upstream makes some PATCH fields required (a posture check's typeId); when the user did not give one,
 * it is taken from the entity as it is, since it cannot change anyway.
 */
export function requiredPatchFields(decl: CliResource, body: Record<string, unknown>): string[] {
  const required = decl.patch?.required ?? [];
  return required.filter((f) => !(f in body));
}
