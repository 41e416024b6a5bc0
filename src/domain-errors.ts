// Errors a dialect's service raises: a stable code that says what went wrong, a detail sentence for people and
// extension members for clients (e.g. the rejected pools). No HTTP here: src/http/errors.ts maps each code to a
// status and problem type once, and each wire shape (problem+json, Cinder's faults, Placement's errors) renders that.

export type DomainErrorCode =
  /** The request is malformed in a way the schemas cannot see (a field is named in extensions.errors). */
  | 'BAD_REQUEST'
  | 'NOT_FOUND'
  /** The state changed under the request (a claim kept losing its optimistic race). */
  | 'CONFLICT'
  /** A volume with this id was placed already. */
  | 'VOLUME_EXISTS'
  /** Every pool was rejected (extensions.rejected says why, pool by pool). */
  | 'NO_VALID_BACKEND'
  /** The API version asked for is outside the range served (a microversion header). */
  | 'UNSUPPORTED_VERSION'
  /** A node report drops a disk that still holds replicas Berth placed (Longhorn refuses it too). */
  | 'DISK_HAS_REPLICAS'
  /** A node still holds replicas Berth placed. */
  | 'NODE_HAS_REPLICAS'
  /** The caller's If-Match generation is no longer current (the thing changed since it was read). */
  | 'PRECONDITION_FAILED';

export interface FieldError {
  path: string;
  message: string;
}

export class DomainError extends Error {
  readonly code: DomainErrorCode;
  readonly extensions: Record<string, unknown>;
  constructor(code: DomainErrorCode, detail: string, extensions: Record<string, unknown> = {}) {
    super(detail);
    this.name = 'DomainError';
    this.code = code;
    this.extensions = extensions;
  }
}

export const badRequest = (detail: string, errors?: FieldError[]) => new DomainError('BAD_REQUEST', detail, errors ? { errors } : {});
export const notFound = (detail: string) => new DomainError('NOT_FOUND', detail);
