// The response envelope of both APIs: {data, meta}. Errors are rendered by plugins/errors.ts.
import { Readable } from 'node:stream';

export const API_VERSION = '0.0.1';
export const API_ENROLLMENT_VERSION = '0.0.1';

export const meta = () => ({ apiVersion: API_VERSION, apiEnrollmentVersion: API_ENROLLMENT_VERSION });

export const ok = (data: unknown) => ({ data, meta: meta() });

export const empty = () => ok({});

type Pagination = { limit: number; offset: number; totalCount: number };

const listStreams = new WeakSet<Readable>();
/** A list answered as a stream (app.ts gives it the JSON content type the schema cannot). */
export const isListStream = (payload: unknown): boolean => payload instanceof Readable && listStreams.has(payload);

export function listOf(data: unknown[], pagination: Pagination, filterableFields: string[]): { data: unknown[]; meta: Record<string, unknown> };
export function listOf(data: unknown[] | AsyncIterable<unknown[]>, pagination: Pagination, filterableFields: string[]): { data: unknown[]; meta: Record<string, unknown> } | Readable;
/**
 * The list envelope. An unlimited list arrives as chunks of items and is written as it is read (the JSON
 * text of the same envelope), pulled by the socket, so memory stays bounded however many rows match.
 */
export function listOf(data: unknown[] | AsyncIterable<unknown[]>, pagination: Pagination, filterableFields: string[]): { data: unknown[]; meta: Record<string, unknown> } | Readable {
  const m = { ...meta(), filterableFields, pagination };
  if (Array.isArray(data)) return { data, meta: m };
  async function* text() {
    yield '{"data":[';
    let first = true;
    for await (const chunk of data as AsyncIterable<unknown[]>) {
      const body = chunk.map((item) => JSON.stringify(item)).join(',');
      if (!body) continue;
      yield first ? body : ',' + body;
      first = false;
    }
    yield `],"meta":${JSON.stringify(m)}}\n`; // a newline at the end, as every JSON answer (app.ts)
  }
  const stream = Readable.from(text(), { objectMode: false });
  listStreams.add(stream);
  return stream;
}
