// Long loops on the thread that serves requests (a large import, its plan) must let other requests
// in: better-sqlite3 answers synchronously, so awaiting a query never reaches the event loop, and a
// 100,000-entity import answered nothing else, not even /version, for 15 s.

/** Every SLICE_MS of work, give the event loop a turn (setImmediate: after pending I/O callbacks). */
const SLICE_MS = 8;

/** A function to await inside a long loop: it yields when the current slice is used up, else returns at once. */
export function pacer(sliceMs = SLICE_MS): () => Promise<void> | undefined {
  let since = performance.now();
  return () => {
    if (performance.now() - since < sliceMs) return undefined;
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        since = performance.now();
        resolve();
      }),
    );
  };
}
