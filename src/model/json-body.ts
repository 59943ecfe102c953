// The checks every JSON request body gets before it is parsed: the API thread's parser (server/app.ts)
// and a large import's thread (model/import-worker.ts), which receives its body unparsed so that
// parsing 10 MB does not stop the API thread (import-thread.ts).
import { ApiError } from './errors.js';

// No stored text may hold NUL (PostgreSQL refuses it, and no field of ours needs it).
export const NUL = /\u0000|\\u0000/;
export const nulRefused = () => new ApiError(400, 'COULD_NOT_PARSE_BODY', 'NUL characters are not accepted in requests');

/** No document of ours nests deeper than this; deeper bodies would exhaust the stack in validation. */
export const MAX_JSON_DEPTH = 64;

/** How deeply a JSON text nests arrays and objects, without parsing it (brackets inside strings do not count). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92) i++; // backslash: skip the escaped character
      else if (ch === 34) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 91 || ch === 123) max = Math.max(max, ++depth);
    else if (ch === 93 || ch === 125) depth--;
  }
  return max;
}

/** The refusal of a non-empty JSON text, before parsing it (NUL, too deep), or undefined. */
export function refuseJsonText(text: string): ApiError | undefined {
  if (NUL.test(text)) return nulRefused();
  if (jsonDepth(text) > MAX_JSON_DEPTH) return new ApiError(400, 'COULD_NOT_PARSE_BODY', `The body nests deeper than ${MAX_JSON_DEPTH} levels`);
  return undefined;
}

// A key that would set an object's prototype once the value is merged (Object.assign), possibly escaped.
const PROTO = /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const CONSTRUCTOR = /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

/**
 * A JSON body parsed off the API thread, refused as the API thread's parser refuses it (fastify's, with
 * prototype poisoning an error): `__proto__` keys and `constructor.prototype` are errors. The text is
 * scanned for them first, as fastify's parser does, so a body without them is parsed at JSON.parse's speed.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  const refused = refuseJsonText(text);
  if (refused) throw refused;
  const poisoned = PROTO.test(text) || CONSTRUCTOR.test(text);
  try {
    return poisoned
      ? JSON.parse(text, (key, value: unknown) => {
          if (key === '__proto__' || (key === 'constructor' && value && typeof value === 'object' && Object.hasOwn(value, 'prototype'))) throw new SyntaxError('Object contains forbidden prototype property');
          return value;
        })
      : JSON.parse(text);
  } catch (err) {
    throw new ApiError(400, 'COULD_NOT_PARSE_BODY', `The body is not valid JSON: ${(err as Error).message}`);
  }
}
