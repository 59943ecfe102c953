// Every failure leaves as upstream's error envelope with a stable code and the request id.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../model/errors.js';
import { meta } from '../envelope.js';
import { goValue } from '../go-value.js';
import type { RouteTable } from '../route-table.js';

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** ajv's complaint as field + reason, e.g. {field: 'username', reason: 'must NOT have fewer than 4 characters'}. */
function fromValidation(errors: AjvError[], context: string | undefined, request: FastifyRequest): ApiError {
  // Prefer the most specific complaint: anyOf/union wrappers say little.
  const e = errors.find((x) => x.keyword !== 'anyOf' && x.keyword !== 'type') ?? errors[0];
  let field = (e.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  if (e.params?.missingProperty) field = [field, e.params.missingProperty].filter(Boolean).join('.');
  if (e.params?.additionalProperty) field = [field, e.params.additionalProperty].filter(Boolean).join('.');
  let reason = e.message ?? 'is not valid';
  if (e.keyword === 'additionalProperties') reason = 'is not a known field';
  if (e.keyword === 'required') reason = 'is required';
  if (e.keyword === 'enum' && Array.isArray(e.params?.allowedValues)) reason = `must be one of ${(e.params!.allowedValues as unknown[]).join(', ')}`;
  // A union of literals fails as one 'const' error per member: name them all.
  const consts = errors.filter((x) => x.keyword === 'const' && x.instancePath === e.instancePath).map((x) => x.params?.allowedValue);
  if (e.keyword === 'const' && consts.length) reason = `must be one of ${consts.join(', ')}`;
  if (!field) field = context === 'body' ? '(body)' : String(context ?? 'request');
  const where = context && context !== 'body' ? `${context} ` : '';
  const source = (context === 'querystring' ? request.query : context === 'params' ? request.params : request.body) as Record<string, unknown> | undefined;
  const value = field.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), source);
  // A body value of the wrong JSON type (a string for a boolean, an array for an object) is one upstream's
  // Go decoder cannot read into its struct: COULD_NOT_PARSE_BODY there, before any validation. Not a null
  // (Go reads it as unset, then validation complains) nor a config's data, a type's schema or a tag's value (free-form there).
  // ztc's own operations (import) keep COULD_NOT_VALIDATE: they have no upstream answer to match, and the
  // import's thread, which reads large bodies itself, answers it on every database.
  const ours = ((request.routeOptions.schema as { summary?: string } | undefined)?.summary ?? '').startsWith('ztc extension');
  const undecodable = value !== null && !ours && !/^(data|schema|tags\.)/.test(field);
  // A posture check's (or response's) typeId picks the type its body is decoded as upstream: one it does
  // not know is a body it cannot decode either.
  const unknownKind = field === 'typeId' && (e.keyword === 'const' || e.keyword === 'enum') && !ours;
  if (context === 'body' && (((e.keyword === 'type' || e.keyword === 'anyOf') && undecodable) || unknownKind)) {
    return new ApiError(400, 'COULD_NOT_PARSE_BODY', `The body of the request could not be parsed: field '${field}' ${reason}`, { field, reason, value });
  }
  return new ApiError(400, 'COULD_NOT_VALIDATE', `The request is not valid: ${where}field '${field}' ${reason}`, { field, reason, value });
}

const FASTIFY_CODES: Record<string, [number, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [400, 'INVALID_CONTENT_TYPE'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'COULD_NOT_PARSE_BODY'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'COULD_NOT_PARSE_BODY'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'REQUEST_TOO_LARGE'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'COULD_NOT_PARSE_BODY'],
  FST_ERR_BAD_URL: [400, 'INVALID_FIELD'],
  FST_ERR_ASYNC_CONSTRAINT: [400, 'INVALID_FIELD'],
};

export function toApiError(err: FastifyError | ApiError | Error, request: FastifyRequest): ApiError {
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError & { validation?: AjvError[]; validationContext?: string };
  if (fe.validation) return fromValidation(fe.validation, fe.validationContext, request);
  if (fe.code && FASTIFY_CODES[fe.code]) {
    const [status, code] = FASTIFY_CODES[fe.code];
    return new ApiError(status, code, fe.message);
  }
  if (err instanceof SyntaxError || fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return new ApiError(400, 'COULD_NOT_PARSE_BODY', `The body is not valid JSON: ${err.message}`);
  // PostgreSQL data exceptions (class 22: bad encoding, out-of-range values) are bad input, not our failure.
  if (typeof fe.code === 'string' && /^22[0-9A-Z]{3}$/.test(fe.code)) return new ApiError(400, 'INVALID_FIELD', 'A value in the request cannot be stored: check for invalid characters or out-of-range numbers');
  // A full disk (SQLite's SQLITE_FULL, the kernel's ENOSPC, PostgreSQL's 53100): nothing was written, and
  // the request can be tried again once there is room; the operator must free space.
  if (fe.code === 'SQLITE_FULL' || fe.code === 'ENOSPC' || fe.code === '53100') {
    return new ApiError(503, 'SERVICE_UNAVAILABLE', 'The controller\'s disk is full: nothing was changed. Try again once the operator has freed space on the data dir\'s (or the database\'s) disk', undefined, { headers: { 'retry-after': '30' } });
  }
  if (fe.statusCode === 429) return new ApiError(429, 'RATE_LIMITED', 'Too many requests: slow down and try again shortly');
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) return new ApiError(fe.statusCode, 'INVALID_FIELD', fe.message);
  return new ApiError(500, 'UNHANDLED', 'An unexpected error occurred; the controller log has the details under this request id');
}

const SECRET_FIELD = /password|secret|privateKey|token/i;

export function sendError(reply: FastifyReply, request: FastifyRequest, e: ApiError) {
  const error: Record<string, unknown> = { code: e.code, message: e.message, requestId: String(request.id) };
  if (e.fieldCause) {
    // Always with a value, as upstream's (a string, "<nil>" when there is none): its CLI prints it.
    // A secret sent in a refused field is not echoed back (answers end up in logs and terminals).
    const value = SECRET_FIELD.test(e.fieldCause.field) && e.fieldCause.value != null ? '<hidden>' : goValue(e.fieldCause.value);
    error.cause = { field: e.fieldCause.field, reason: e.fieldCause.reason, value };
    error.causeMessage = `${e.fieldCause.field}: ${e.fieldCause.reason}`;
  }
  const params = request.routeOptions.url && request.params && typeof request.params === 'object' ? (request.params as Record<string, string>) : {};
  const urlVars = Object.fromEntries(Object.entries(params).filter(([k]) => k !== '*'));
  error.args = { urlVars };
  if (e.extra?.data) error.data = e.extra.data;
  for (const [k, v] of Object.entries(e.extra?.headers ?? {})) reply.header(k, v);
  return reply.code(e.status).type('application/json').send({ error, meta: meta() });
}

export function registerErrorHandling(app: FastifyInstance, table: RouteTable) {
  app.setErrorHandler((err, request, reply) => {
    const e = toApiError(err as FastifyError, request);
    if (e.status >= 500) request.log.error({ err }, 'unhandled error');
    return sendError(reply, request, e);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const other = table.methodsFor(path).filter((m) => m !== request.method);
    if (other.length) {
      reply.header('allow', other.join(', '));
      return sendError(reply, request, new ApiError(405, 'METHOD_NOT_ALLOWED', `${request.method} is not supported on ${path}; use ${other.join(', ')}`));
    }
    return sendError(reply, request, new ApiError(404, 'NOT_FOUND', `No operation at ${request.method} ${path}`));
  });
}
