// The bookkeeping of one end of backpressure, shared by everything that relays (a channel, a socket the
// router dials for a terminator, a circuit's end across a link): which full destinations this end waits
// for, and which sources it holds back until it drains. What "pause" and "resume" mean (a socket's
// reading, a link's) stays with each end.

/**
 * One end of backpressure. A source relaying into a destination that is full pauses for it
 * (`pauseFor`), the destination holds it (`hold`) and releases it once drained (`released`).
 */
export interface Flow {
  readonly closed: boolean;
  readonly full: boolean;
  pauseFor(dest: Flow): void;
  hold(source: Flow): void;
  released(by: Flow): void;
}

export class Backpressure {
  /** Full destinations this end stopped reading for, until each drains. */
  private waitingFor = new Set<Flow>();
  /** Sources that stopped reading for this end, until it drains. */
  private holding = new Set<Flow>();

  constructor(private readonly self: Flow) {}

  /** Whether this end is waiting for a destination (its reading is paused). */
  get paused(): boolean {
    return this.waitingFor.size > 0;
  }

  /** Whether this end holds back a source. */
  get holds(): boolean {
    return this.holding.size > 0;
  }

  /** Wait for `dest` to drain: true when this wait is new (the caller stops reading). */
  waitFor(dest: Flow): boolean {
    if (this.waitingFor.has(dest) || this.self.closed || dest.closed) return false;
    this.waitingFor.add(dest);
    dest.hold(this.self);
    return true;
  }

  hold(source: Flow) {
    this.holding.add(source);
  }

  /** `dest` drained (or closed): true when nothing holds this end any more (the caller reads again). */
  freedBy(dest: Flow): boolean {
    this.waitingFor.delete(dest);
    return this.waitingFor.size === 0;
  }

  /** This end drained (or closed): the sources it held back read again, unless another still holds them. */
  releaseAll() {
    if (!this.holding.size) return;
    const sources = [...this.holding];
    this.holding.clear();
    for (const source of sources) source.released(this.self);
  }
}
