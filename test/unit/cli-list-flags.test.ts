// A list command's flags that add conditions to its filter (`ztc identity list --online`): and-ed with
// the filter's own condition, its sort, skip and limit kept at the end, quoted text left alone.
import { describe, expect, it } from 'vitest';
import { andFilter } from '../../src/cli/commands/resources.js';

const ON = 'hasEdgeRouterConnection = true';

describe('andFilter', () => {
  it('adds the conditions to the filter, or is them alone', () => {
    expect(andFilter(undefined, [])).toBeUndefined();
    expect(andFilter('name = "a"', [])).toBe('name = "a"');
    expect(andFilter(undefined, [ON])).toBe(ON);
    expect(andFilter('', [ON])).toBe(ON);
    expect(andFilter('name = "a" or name = "b"', [ON])).toBe(`${ON} and (name = "a" or name = "b")`);
  });

  it('keeps sort by, skip and limit at the end, and does not look inside quoted text', () => {
    expect(andFilter('name contains "x" sort by name desc limit 5', [ON])).toBe(`${ON} and (name contains "x") sort by name desc limit 5`);
    expect(andFilter('sort by name', [ON])).toBe(`${ON} sort by name`);
    expect(andFilter('name = "a sort by b"', [ON])).toBe(`${ON} and (name = "a sort by b")`);
    expect(andFilter('name = "a \\" limit 3"  skip 2', [ON])).toBe(`${ON} and (name = "a \\" limit 3") skip 2`);
    expect(andFilter('true limit none', [ON, 'isAdmin = false'])).toBe(`${ON} and isAdmin = false and (true) limit none`);
  });
});
