// BENCH_LOOP_TRACE=1: the controller process notes every stall of its event loop longer than
// BENCH_LOOP_TRACE_MS (20 by default), with when it ended, and writes them to stderr when it stops: where
// another client's latency tail comes from (a long synchronous piece of work, a GC pause, CPU taken by
// other threads), without a profiler's own overhead.
const TICK_MS = 2;

export function traceLoop(): () => void {
  const threshold = Number(process.env.BENCH_LOOP_TRACE_MS ?? 20);
  const t0 = performance.now();
  const stalls: { at: number; ms: number }[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const gap = now - last - TICK_MS;
    if (gap > threshold) stalls.push({ at: now - t0, ms: gap });
    last = now;
  }, TICK_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    const by = (lo: number) => stalls.filter((s) => s.ms >= lo).length;
    process.stderr.write(`loop stalls >= ${threshold} ms: ${stalls.length}; >= 50 ms: ${by(50)}; >= 100 ms: ${by(100)}\n`);
    for (const s of [...stalls].sort((a, b) => b.ms - a.ms).slice(0, 30)) process.stderr.write(`  ${(s.at / 1000).toFixed(2)} s: ${s.ms.toFixed(0)} ms\n`);
  };
}
