/** JSON text columns: parse defensively, a damaged cell must not take a whole list down. */
export function fromJson<T>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined || text === '') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

export const toJson = (value: unknown, fallback: unknown = {}): string => JSON.stringify(value ?? fallback);

export const bit = (b: boolean | null | undefined): number => (b ? 1 : 0);
export const isSet = (n: unknown): boolean => n === 1 || n === true || n === '1';

/**
 * A JSON list of strings, sorted: role attributes and policy roles are sets, and upstream returns
 * them in sorted order whatever order they were written in.
 */
/**
 * A list upstream stores as a string set (its store keeps each value as a key of a bucket): read back
 * without repeats, in byte order, whatever order it was written in. Scopes, MAC addresses, domains...
 */
export const sortedSet = (list: unknown): string[] => (Array.isArray(list) ? [...new Set(list.map(String))].sort() : []);
export const sortedStrings = (text: string | null | undefined): string[] => [...fromJson<string[]>(text, [])].sort();
