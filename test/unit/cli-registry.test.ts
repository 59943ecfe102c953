// The help lists commands from registry.ts without loading them: each entry must say what the
// loaded command says, so `ztc --help` and `ztc NAME --help` never disagree.
import { describe, expect, it } from 'vitest';
import { fullProgram, program } from '../../src/cli/main.js';
import { COMMANDS } from '../../src/cli/registry.js';

describe('the command registry', () => {
  it('describes every command as the command itself does, with its usage', async () => {
    const full = await fullProgram();
    const loaded = new Map(full.commands.map((c) => [c.name(), c]));
    for (const e of COMMANDS) {
      const c = loaded.get(e.name);
      expect(c, e.name).toBeDefined();
      expect(e.description, e.name).toBe(c!.description());
      expect(e.usage ?? '', e.name).toBe(c!.commands.length && !c!.registeredArguments.length ? '' : c!.usage());
    }
    expect([...loaded.keys()].sort()).toEqual([...COMMANDS.map((e) => e.name), 'completion'].sort());
  });

  it('lists each command in the top-level help as its own help names it (no option words read as arguments)', async () => {
    const stub = await program(['node', 'ztc', '--help']);
    const full = await fullProgram();
    const term = (c: { name(): string; registeredArguments: readonly { name(): string; required: boolean; variadic: boolean }[] }) =>
      // A stub's `[options]` is kept as a word of its line (it has no options of its own to show it).
      [c.name(), ...c.registeredArguments.filter((a) => a.name() !== 'options').map((a) => (a.required ? `<${a.name()}${a.variadic ? '...' : ''}>` : `[${a.name()}${a.variadic ? '...' : ''}]`))].join(' ');
    for (const c of stub.commands) expect(term(c), c.name()).toBe(term(full.commands.find((f) => f.name() === c.name())!));
  });

  it('loads only the command being run', async () => {
    const p = await program(['node', 'ztc', 'identity', 'list']);
    const identity = p.commands.find((c) => c.name() === 'identity')!;
    expect(identity.commands.map((c) => c.name())).toContain('list');
    expect(p.commands.find((c) => c.name() === 'service')!.commands).toEqual([]);
  });
});
