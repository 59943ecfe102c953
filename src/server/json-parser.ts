// The API thread's parser of JSON bodies (server/app.ts), which the import's route wraps
// (routes/management/model.ts) to hand large bodies to the import's thread unparsed.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { refuseJsonText } from '../model/json-body.js';

/** The API thread's JSON bodies: an empty one is none; NULs and deep nesting are refused (json-body.ts), then fastify's parser (prototype poisoning an error). */
export function jsonBodyParser(app: FastifyInstance) {
  const json = app.getDefaultJsonParser('error', 'error');
  return (req: FastifyRequest, body: string, done: (err: Error | null, body?: unknown) => void) => {
    // An empty body with a JSON content type is "no body", as several clients send it on POSTs.
    if (body.trim() === '') return done(null, undefined);
    const refused = refuseJsonText(body);
    if (refused) return done(refused, undefined);
    return json(req, body, done);
  };
}
