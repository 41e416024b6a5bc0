// The one mapping from domain error codes to HTTP: status, problem type and title. problem.ts renders it as
// problem+json; other wire shapes (Cinder's faults, Placement's error list) render the same classification.
import { DomainError, type DomainErrorCode } from '../domain-errors.ts';

export interface ErrorHttp {
  status: number;
  /** The problem type, after /problems/. */
  slug: string;
  title: string;
}

const DOMAIN_ERROR_HTTP: Readonly<Record<DomainErrorCode, ErrorHttp>> = {
  BAD_REQUEST: { status: 400, slug: 'bad-request', title: 'Bad Request' },
  NOT_FOUND: { status: 404, slug: 'not-found', title: 'Not Found' },
  CONFLICT: { status: 409, slug: 'conflict', title: 'Conflict' },
  VOLUME_EXISTS: { status: 409, slug: 'volume-exists', title: 'Volume already exists' },
  NO_VALID_BACKEND: { status: 409, slug: 'no-valid-backend', title: 'No valid backend' },
  UNSUPPORTED_VERSION: { status: 406, slug: 'unsupported-version', title: 'Not Acceptable' },
  DISK_HAS_REPLICAS: { status: 409, slug: 'disk-has-replicas', title: 'Conflict' },
  NODE_HAS_REPLICAS: { status: 409, slug: 'node-has-replicas', title: 'Conflict' },
  PRECONDITION_FAILED: { status: 412, slug: 'precondition-failed', title: 'Precondition Failed' },
};

/** What an error means over HTTP: its mapping, detail and extension members; null for anything but a DomainError. */
export function describeDomainError(err: unknown): (ErrorHttp & { detail: string; extensions: Record<string, unknown> }) | null {
  if (!(err instanceof DomainError)) return null;
  return { ...DOMAIN_ERROR_HTTP[err.code], detail: err.message, extensions: err.extensions };
}
