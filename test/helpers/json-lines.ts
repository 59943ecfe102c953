// The JSON lines a child process prints on stdout (the C SDK peers' reports), each taken once, in order.
import type { ChildProcess } from 'node:child_process';

export interface JsonLines {
  /** The next line not yet taken (waits for it: callers race it with their own deadline). */
  next(): Promise<Record<string, unknown>>;
}

export function jsonLines(child: ChildProcess): JsonLines {
  const queue: Record<string, unknown>[] = [];
  const waiting: ((v: Record<string, unknown>) => void)[] = [];
  let buf = '';
  child.stdout!.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.startsWith('{')) continue;
      const v = JSON.parse(line);
      const w = waiting.shift();
      if (w) w(v);
      else queue.push(v);
    }
  });
  return { next: () => (queue.length ? Promise.resolve(queue.shift()!) : new Promise((r) => waiting.push(r))) };
}
