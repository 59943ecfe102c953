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

  it('loads only the command being run', async () => {
    const p = await program(['node', 'ztc', 'identity', 'list']);
    const identity = p.commands.find((c) => c.name() === 'identity')!;
    expect(identity.commands.map((c) => c.name())).toContain('list');
    expect(p.commands.find((c) => c.name() === 'service')!.commands).toEqual([]);
  });
});
