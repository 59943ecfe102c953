// A few worker threads (one per core but one) for the crypto steps of request handling, so that a burst of
// enrollments or logins never stalls the event loop that answers everybody else. Work beyond what the
// workers are doing waits in a bounded queue; when that is full the caller gets 429 at once rather
// than a growing wait (clients retry, the controller stays responsive).
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ApiError } from '../errors.js';
import type { CryptoTask, CryptoTasks } from './tasks.js';
import type { ReplyMessage, TaskMessage } from './worker.js';

interface Job {
  id: number;
  task: CryptoTask;
  args: unknown[];
  resolve(v: unknown): void;
  reject(e: Error): void;
}

interface Slot {
  worker: Worker;
  job?: Job;
}

/** Tasks waiting for a worker, beyond those running, before new ones are refused with 429. */
export const DEFAULT_CRYPTO_QUEUE = 128;

// One worker per core but one, at least one: the event loop keeps a core of its own, so a burst of
// logins (scrypt holds a core ~100 ms each) does not slow everyone else's requests.
const settings = { size: Math.max(1, (os.availableParallelism?.() ?? os.cpus().length) - 1), queueLimit: DEFAULT_CRYPTO_QUEUE };
const slots: Slot[] = [];
const queue: Job[] = [];
let nextId = 1;

/** Pool size and queue bound; the pool grows or shrinks to the size on the next task. */
export function configureCryptoPool(o: { size?: number; queueLimit?: number }) {
  if (o.size !== undefined) settings.size = Math.max(1, o.size);
  if (o.queueLimit !== undefined) settings.queueLimit = Math.max(0, o.queueLimit);
}

export const cryptoPoolStats = () => ({ size: settings.size, running: slots.filter((s) => s.job).length, queued: queue.length, queueLimit: settings.queueLimit });

/**
 * Where the worker's code comes from: the single executable embeds it as source (it cannot load
 * files); otherwise the compiled file.
 */
function spawnWorker(): Worker {
  const embedded = (globalThis as { __ztcCryptoWorker?: string }).__ztcCryptoWorker;
  if (embedded) return new Worker(embedded, { eval: true });
  // Compiled: beside this module; bundled (dist/src/bundle/): in ../model/crypto;
  // run from the TypeScript sources (tests): the compiled copy.
  for (const candidate of ['./worker.js', '../model/crypto/worker.js', '../../../dist/src/model/crypto/worker.js']) {
    const url = new URL(candidate, import.meta.url);
    if (fs.existsSync(fileURLToPath(url))) return new Worker(url);
  }
  throw new Error('the crypto worker is not built: run `npm run build`');
}

function addSlot(): Slot {
  const slot: Slot = { worker: spawnWorker() };
  slot.worker.unref();
  slot.worker.on('message', (m: ReplyMessage) => {
    const job = slot.job;
    if (!job || job.id !== m.id) return;
    slot.job = undefined;
    slot.worker.unref();
    if ('error' in m) {
      const a = m.error.api;
      job.reject(a ? new ApiError(a.status, a.code, m.error.message, a.fieldCause) : new Error(m.error.message));
    } else job.resolve(m.value);
    dispatch();
  });
  // A worker that dies takes only its own task down; a fresh one replaces it.
  const lost = (why: Error) => {
    const i = slots.indexOf(slot);
    if (i < 0) return;
    slots.splice(i, 1);
    slot.job?.reject(why);
    slot.job = undefined;
    dispatch();
  };
  slot.worker.on('error', lost);
  slot.worker.on('exit', (code) => lost(new Error(`crypto worker exited with code ${code}`)));
  slots.push(slot);
  return slot;
}

function dispatch() {
  while (queue.length) {
    let slot = slots.find((s) => !s.job);
    if (!slot && slots.length < settings.size) slot = addSlot();
    if (!slot) return;
    const job = queue.shift()!;
    slot.job = job;
    // Referenced while busy, so a short-lived CLI process waits for its result before exiting.
    slot.worker.ref();
    slot.worker.postMessage({ id: job.id, task: job.task, args: job.args } satisfies TaskMessage);
  }
  // Shrink after a reconfiguration: idle workers beyond the size go.
  for (const s of slots.filter((x) => !x.job)) {
    if (slots.length <= settings.size) break;
    slots.splice(slots.indexOf(s), 1);
    void s.worker.terminate();
  }
}

/** Run one of tasks.ts's functions on a worker thread; 429 SERVER_TOO_MANY_REQUESTS when the queue is full. */
export function runCrypto<T extends CryptoTask>(task: T, args: Parameters<CryptoTasks[T]>): Promise<ReturnType<CryptoTasks[T]>> {
  const idle = slots.some((s) => !s.job) || slots.length < settings.size;
  if (!idle && queue.length >= settings.queueLimit) {
    return Promise.reject(
      new ApiError(429, 'SERVER_TOO_MANY_REQUESTS', 'The controller is busy with other cryptographic work (logins, enrollments): try again shortly', undefined, { headers: { 'retry-after': '1' } }),
    );
  }
  return new Promise((resolve, reject) => {
    queue.push({ id: nextId++, task, args, resolve: resolve as (v: unknown) => void, reject });
    dispatch();
  });
}
