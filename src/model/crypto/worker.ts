// Entry of a crypto worker thread: runs tasks.ts functions for the pool and answers with the result
// or the error (an ApiError keeps its status and code, so a bad CSR is still a 400).
import { parentPort } from 'node:worker_threads';
import { ApiError } from '../errors.js';
import { cryptoTasks, type CryptoTask } from './tasks.js';

export interface TaskMessage {
  id: number;
  task: CryptoTask;
  args: unknown[];
}

export type ReplyMessage =
  | { id: number; value: unknown }
  | { id: number; error: { message: string; api?: { status: number; code: string; fieldCause?: ApiError['fieldCause'] } } };

parentPort?.on('message', (m: TaskMessage) => {
  let reply: ReplyMessage;
  try {
    const fn = cryptoTasks[m.task] as (...a: unknown[]) => unknown;
    if (typeof fn !== 'function') throw new Error(`unknown crypto task ${String(m.task)}`);
    reply = { id: m.id, value: fn(...m.args) };
  } catch (e) {
    const err = e as Error;
    reply = { id: m.id, error: { message: err.message, ...(e instanceof ApiError ? { api: { status: e.status, code: e.code, fieldCause: e.fieldCause } } : {}) } };
  }
  parentPort!.postMessage(reply);
});
