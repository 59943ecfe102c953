// One error type for the whole controller. Routes never build error bodies by hand: they throw an
// ApiError and the error plugin renders upstream's envelope, so codes and statuses stay consistent.

export interface FieldCause {
  field: string;
  reason: string;
  value?: unknown;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fieldCause?: FieldCause,
    readonly extra?: { data?: Record<string, unknown>; headers?: Record<string, string> },
  ) {
    super(message);
  }
}

export const notFound = (what = 'resource', id?: string) =>
  new ApiError(404, 'NOT_FOUND', id ? `The ${what} with id '${id}' was not found` : `The ${what} was not found`);

export const unauthorized = (message = 'The request could not be completed. The session is not authorized or the credentials are invalid') =>
  new ApiError(401, 'UNAUTHORIZED', message);

export const invalidAuth = () =>
  new ApiError(401, 'INVALID_AUTH', 'The authentication request failed: the credentials are invalid or the identity may not log in');

/**
 * Why a login was refused, for its event and ztc_logins_failed_total (ziti#1834); never in the answer,
 * which stays INVALID_AUTH whatever the reason (model/events/emit.ts failureOf reads it).
 */
export type LoginFailure =
  | 'unknown-credential'
  | 'wrong-password'
  | 'locked'
  | 'identity-disabled'
  | 'method-not-allowed'
  | 'no-certificate'
  | 'certificate-expired'
  | 'certificate-untrusted'
  | 'invalid-token';

/** A refused login: INVALID_AUTH, carrying why for its event only. */
export const loginRefused = (failure: LoginFailure, e: ApiError = invalidAuth()) => Object.assign(e, { failure });

export const invalidField = (field: string, reason: string, value?: unknown) =>
  new ApiError(400, 'INVALID_FIELD', `The field '${field}' is not valid: ${reason}`, { field, reason, value });

export const couldNotValidate = (field: string, reason: string, value?: unknown) =>
  new ApiError(400, 'COULD_NOT_VALIDATE', `The request is not valid: ${field} ${reason}`, { field, reason, value });

/**
 * A delete refused because other entities name this one: upstream's 409 and its cause, which lists the
 * referring ids as Go prints a slice (`[a b]`) under the field that names this entity.
 */
export const referencedBy = (localType: string, remoteType: string, ids: string[], field: string) =>
  new ApiError(409, 'CAN_NOT_DELETE_REFERENCED_ENTITY', 'the entity cannot be deleted because it is referenced by another entity, see cause', {
    field,
    reason: `entity type ${localType} referenced by ${remoteType}: [${ids.join(' ')}]`,
    value: `[${ids.join(' ')}]`,
  });

export const conflict = (code: string, message: string) => new ApiError(409, code, message);

export const cannotDelete = (message: string) => new ApiError(400, 'ENTITY_CAN_NOT_BE_DELETED', message);
