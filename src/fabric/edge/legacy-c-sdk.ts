// OpenZiti's C SDK before 0.36 (libziti 0.29 in PyPI openziti 0.6.0, ziti-edge-tunnel before 0.22.x, the
// desktop tunnelers of 2023) reads its edge channel through a pool of 32 message buffers, each held by
// a connection until the next turn of its loop: it processes a read's messages until the pool is empty
// and looks at the rest only when its socket has bytes again (channel.c process_inbound; fixed in 0.36.0
// by "set channel readability before each IO phase"). Upstream's router writes frame by frame as its
// goroutines produce them, so the SDK gets them a few at a time; ztc's router wrote what one turn of its
// loop produced together (100 circuits closed at once: 100 StateClosed in one TLS write), and a host
// that received them stopped answering: the next client's Dial sat behind the 68 it had not read.
//
// So on such a channel the router writes at most FRAMES frames per INTERVAL_MS, and after the frames
// stop it nudges the SDK a few times (a frame the SDK ignores), so that whatever a late read still left
// in its buffer (the SDK was not scheduled while the frames came) is processed now, not when the next
// client arrives.
import type { Channel } from '../channel/channel.js';
import type { Message } from '../channel/codec.js';
import { Header } from '../channel/messages.js';

/** Frames per interval: half the SDK's pool, as other messages (data waiting for the app) hold buffers too. */
export const FRAMES = 16;
export const INTERVAL_MS = 2;
/**
 * When the nudges go, in ms after the frames stopped: each lets the SDK process 31 more frames, and the
 * later ones reach an SDK that was not scheduled for a while. New frames start the series again.
 */
export const NUDGES_MS = [5, 25, 100, 250, 500, 1000, 2000, 4000];

/**
 * Whether a hello comes from a C SDK that stalls on bursts: its body is the channel's token
 * (`ziti-sdk-c[N]@host`) and it lacks the SupportsInspect header that every C SDK from 0.36.5 sends.
 */
export function stallsOnBursts(hello: Message): boolean {
  return hello.body.subarray(0, 11).toString('latin1') === 'ziti-sdk-c[' && !hello.headers.has(Header.SupportsInspect);
}

/**
 * Pace `channel`; `nudge` gives a frame the SDK ignores (or nothing), asked for when each nudge goes: the
 * SDK reads it after the frames it already has, so it is judged by the state those leave.
 */
export function paceForLegacySdk(channel: Channel, nudge: () => Message | undefined) {
  /** Frames sent since the nudges last ran their course; nudges among the frames of the burst ending. */
  let recent = 0;
  let nudges = 0;
  let step = 0;
  let timer: NodeJS.Timeout | undefined;
  let lastIdle = 0;
  const next = () => {
    timer = undefined;
    if (channel.closed) return;
    const m = nudge();
    if (m) {
      nudges++;
      channel.send(m);
    }
    if (++step < NUDGES_MS.length) (timer = setTimeout(next, NUDGES_MS[step] - NUDGES_MS[step - 1])).unref();
    else recent = 0;
  };
  channel.setPacing({
    frames: FRAMES,
    intervalMs: INTERVAL_MS,
    idle(burst) {
      const frames = burst - Math.min(burst, nudges);
      nudges = 0;
      if (!frames) return;
      // A few frames alone cannot fill the pool, but several small bursts the SDK reads together can;
      // those seconds apart are read apart.
      const now = Date.now();
      if (now - lastIdle > NUDGES_MS[NUDGES_MS.length - 1]) recent = 0;
      lastIdle = now;
      recent += frames;
      if (recent <= FRAMES) return;
      if (timer) clearTimeout(timer);
      step = 0;
      timer = setTimeout(next, NUDGES_MS[0]);
      timer.unref();
    },
  });
}
