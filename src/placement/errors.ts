// Placement's error shape: {"errors": [{"status", "title", "detail", "code", "request_id"}]}. The detail is
// webob's rendering: "<explanation>\n\n <message>  ". Pure: no Fastify imports.

export const CODES = {
  DEFAULT: 'placement.undefined_code',
  INVENTORY_INUSE: 'placement.inventory.inuse',
  CONCURRENT_UPDATE: 'placement.concurrent_update',
  DUPLICATE_NAME: 'placement.duplicate_name',
  PROVIDER_IN_USE: 'placement.resource_provider.inuse',
  PROVIDER_CANNOT_DELETE_PARENT: 'placement.resource_provider.cannot_delete_parent',
  RESOURCE_PROVIDER_NOT_FOUND: 'placement.resource_provider.not_found',
  QUERY_DUPLICATE_KEY: 'placement.query.duplicate_key',
  QUERY_BAD_VALUE: 'placement.query.bad_value',
  QUERY_MISSING_VALUE: 'placement.query.missing_value',
} as const;

/** webob's title and explanation for each status Placement answers with. */
const STATUS_TEXT: Record<number, { title: string; explanation: string }> = {
  400: {
    title: 'Bad Request',
    explanation: 'The server could not comply with the request since it is either malformed or otherwise incorrect.',
  },
  401: {
    title: 'Unauthorized',
    explanation: 'This server could not verify that you are authorized to access the document you requested. Either you ' +
      'supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.',
  },
  403: { title: 'Forbidden', explanation: 'Access was denied to this resource.' },
  404: { title: 'Not Found', explanation: 'The resource could not be found.' },
  405: { title: 'Method Not Allowed', explanation: 'The method specified is not allowed for this resource.' },
  406: {
    title: 'Not Acceptable',
    explanation: 'The resource could not be generated that was acceptable to your browser (content of type application/json. ',
  },
  409: { title: 'Conflict', explanation: 'There was a conflict when trying to complete your request.' },
  413: { title: 'Request Entity Too Large', explanation: 'The body of your request was too large for this server.' },
  415: { title: 'Unsupported Media Type', explanation: 'The request media type is not supported by this server.' },
  429: { title: 'Too Many Requests', explanation: 'The client has sent too many requests in a given amount of time' },
  500: { title: 'Internal Server Error', explanation: 'The server has either erred or is incapable of performing the requested operation.' },
  503: { title: 'Service Unavailable', explanation: 'The server is currently unavailable. Please try again at a later time.' },
};

/** Thrown by the Placement domain; rendered by the plugin's error handler. */
export class PlacementError extends Error {
  readonly status: number;
  readonly code: string;
  /** Extra fields of the error entry (406 carries max_version/min_version). */
  readonly extra: Record<string, unknown>;
  /** When set, the detail is exactly this (406 has no trailing spaces). */
  readonly rawDetail: string | undefined;
  constructor(status: number, message: string, code: string = CODES.DEFAULT, extra: Record<string, unknown> = {}, rawDetail?: string) {
    super(message);
    this.name = 'PlacementError';
    this.status = status;
    this.code = code;
    this.extra = extra;
    this.rawDetail = rawDetail;
  }
}

export const badRequest = (message: string, code: string = CODES.DEFAULT) => new PlacementError(400, message, code);
export const notFound = (message: string, code: string = CODES.DEFAULT) => new PlacementError(404, message, code);
export const conflict = (message: string, code: string = CODES.DEFAULT) => new PlacementError(409, message, code);

export function statusTitle(status: number): string {
  return STATUS_TEXT[status]?.title ?? (status >= 500 ? 'Internal Server Error' : 'Bad Request');
}

/** webob's plain rendering of an HTTP error: explanation, a blank line, the message, two trailing spaces. */
export function renderDetail(status: number, message: string): string {
  const explanation = STATUS_TEXT[status]?.explanation ?? '';
  return `${explanation}\n\n ${message}  `;
}

export interface PlacementErrorEntry {
  status: number;
  title: string;
  detail: string;
  code?: string;
  request_id: string;
  [extra: string]: unknown;
}

/** The body; `withCode` is false below microversion 1.23, where Placement did not send codes. */
export function errorBody(err: PlacementError, requestId: string, withCode: boolean): { errors: PlacementErrorEntry[] } {
  const entry: PlacementErrorEntry = {
    status: err.status,
    title: statusTitle(err.status),
    detail: err.rawDetail ?? renderDetail(err.status, err.message),
    request_id: requestId,
    ...err.extra,
  };
  if (withCode) entry.code = err.code;
  return { errors: [entry] };
}
