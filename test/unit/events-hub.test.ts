// The hub serialises events off the request path, in batches: what reaches the events file and a
// live stream must still be every event, once, in the order emitted, bursts (drained at the next
// turn) and quiet spells (drained by the timer) alike, and a stream hears only what came after it opened.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { Events } from '../../src/model/events/hub.js';
import type { SessionEvent } from '../../src/model/events/types.js';

const session = (events: Events, n: number) =>
  events.stamp<SessionEvent>({ namespace: 'edge.sessions', event_type: 'created', session_type: 'Dial', id: `s${n}`, api_session_id: 'a', identity_id: 'i', service_id: 'x' });

describe('the events hub', () => {
  it('hands the file and each stream every event once, in order, serialised once, after a burst and a trickle', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-hub-'));
    const file = path.join(dir, 'events.jsonl');
    const events = new Events(undefined);
    events.openFile({ file, maxBytes: 64 * 1024 * 1024, keep: 1 });
    events.emit(session(events, -1)); // before any stream: the file has it, the stream must not
    const streamed: string[] = [];
    const heard: string[] = [];
    events.subscribe((e) => void heard.push((e as SessionEvent).id));
    const batches: number[] = [];
    events.subscribeStream((batch, lines) => {
      batches.push(batch.length);
      batch.forEach((e, i) => {
        expect(JSON.parse(lines[i])).toEqual(e);
        streamed.push((e as SessionEvent).id);
      });
    });
    // A burst larger than one drain, then events a few at a time across several drains.
    for (let n = 0; n < 5000; n++) events.emit(session(events, n));
    expect(heard).toHaveLength(5000); // in-process subscribers hear at once
    for (let n = 5000; n < 5030; n++) {
      events.emit(session(events, n));
      // Now and then until the drain's timer has handed them over (a quiet spell).
      if (n % 10 === 9) await vi.waitFor(() => expect(streamed).toHaveLength(n + 1), { timeout: 5000, interval: 5 });
    }
    await events.flush();
    const expected = Array.from({ length: 5030 }, (_, n) => `s${n}`);
    expect(streamed).toEqual(expected);
    expect(batches.length).toBeGreaterThan(1);
    const written = fs.readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l).id);
    expect(written).toEqual(['s-1', ...expected]);
    await events.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serialises nothing on emit: the stream gets the event later, as text made after the emit', async () => {
    const events = new Events(undefined);
    const got: string[] = [];
    events.subscribeStream((_batch, lines) => void got.push(...lines));
    events.emit(session(events, 1));
    expect(got).toEqual([]);
    await events.flush();
    expect(got.map((l) => JSON.parse(l).id)).toEqual(['s1']);
  });
});
