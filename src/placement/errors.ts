// Placement's error shape: {"errors": [{"status", "title", "detail", "code", "request_id"}]}, rendered as webob
// renders an HTTP error for Placement's json_error_formatter: the status' template (its explanation, the
// request's method, Accept or Content-Type), the message, tags stripped and newlines flattened; as text/html or
// text/plain when the Accept header prefers them. Pure: no Fastify imports.

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

/** What a status' template reads from the request (webob fills ${REQUEST_METHOD}, ${HTTP_ACCEPT}, ${CONTENT_TYPE}). */
export interface RequestFacts {
  method: string;
  accept: string;
  contentType: string;
}

/** webob's title and body template per status; `{detail}` is the message. */
const STATUS: Record<number, { title: string; template: (r: RequestFacts) => string }> = {
  400: { title: 'Bad Request', template: () => plain('The server could not comply with the request since it is either malformed or otherwise incorrect.') },
  401: {
    title: 'Unauthorized',
    template: () => plain('This server could not verify that you are authorized to access the document you requested. Either you ' +
      'supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.'),
  },
  403: { title: 'Forbidden', template: () => plain('Access was denied to this resource.') },
  404: { title: 'Not Found', template: () => plain('The resource could not be found.') },
  405: { title: 'Method Not Allowed', template: (r) => `The method ${r.method} is not allowed for this resource. <br /><br />\n{detail}` },
  406: {
    title: 'Not Acceptable',
    template: (r) => `The resource could not be generated that was acceptable to your browser\n(content of type ${r.accept}. <br /><br />\n{detail}`,
  },
  409: { title: 'Conflict', template: () => plain('There was a conflict when trying to complete your request.') },
  413: { title: 'Request Entity Too Large', template: () => plain('The body of your request was too large for this server.') },
  415: {
    title: 'Unsupported Media Type',
    template: (r) => `The request media type ${r.contentType} is not supported by this server.\n<br /><br />\n{detail}`,
  },
  429: { title: 'Too Many Requests', template: () => plain('The client has sent too many requests in a given amount of time') },
  500: { title: 'Internal Server Error', template: () => plain('The server has either erred or is incapable of performing the requested operation.') },
  503: { title: 'Service Unavailable', template: () => plain('The server is currently unavailable. Please try again at a later time.') },
};

/** webob's default body template: explanation, two line breaks, the detail, an (empty) comment. */
function plain(explanation: string): string {
  return `${explanation}<br /><br />\n{detail}\n\n`;
}

/** Thrown by the Placement domain; rendered by the plugin's error handler. */
export class PlacementError extends Error {
  readonly status: number;
  readonly code: string;
  /** Extra fields of the error entry (a refused microversion carries max_version/min_version). */
  readonly extra: Record<string, unknown>;
  /** Response headers the error carries (Allow on a 405). */
  readonly headers: Record<string, string>;
  constructor(status: number, message: string, code: string = CODES.DEFAULT, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'PlacementError';
    this.status = status;
    this.code = code;
    this.extra = extra;
    this.headers = headers;
  }
}

export const badRequest = (message: string, code: string = CODES.DEFAULT) => new PlacementError(400, message, code);
export const notFound = (message: string, code: string = CODES.DEFAULT) => new PlacementError(404, message, code);
export const conflict = (message: string, code: string = CODES.DEFAULT) => new PlacementError(409, message, code);

function statusTitle(status: number): string {
  return STATUS[status]?.title ?? (status >= 500 ? 'Internal Server Error' : 'Bad Request');
}

/** webob.exc.strip_tags. */
function stripTags(value: string): string {
  return value.replace(/\n/g, ' ').replace(/\r/g, '').replace(/<br.*?>/gis, '\n').replace(/<!--|-->/g, '').replace(/<.*?>/gs, '');
}

function body(status: number, message: string, facts: RequestFacts): string {
  const template = STATUS[status]?.template(facts) ?? plain('');
  return template.replace('{detail}', () => message);
}

/** The detail as Placement's JSON formatter renders it. */
function renderDetail(status: number, message: string, facts: RequestFacts): string {
  return stripTags(body(status, message, facts));
}

interface PlacementErrorEntry {
  status: number;
  title: string;
  detail: string;
  code?: string;
  request_id: string;
  [extra: string]: unknown;
}

/** The JSON body; `withCode` is false below microversion 1.23 (and when the microversion itself was refused). */
function errorBody(err: PlacementError, facts: RequestFacts, requestId: string, withCode: boolean): { errors: PlacementErrorEntry[] } {
  const entry: PlacementErrorEntry = {
    status: err.status, title: statusTitle(err.status), detail: renderDetail(err.status, err.message, facts),
    ...(withCode ? { code: err.code } : {}), request_id: requestId, ...err.extra,
  };
  return { errors: [entry] };
}

export type ErrorFormat = 'json' | 'html' | 'plain';

/** The rendered answer in the format the Accept header prefers (webob offers text/html, then application/json). */
export function renderError(
  err: PlacementError, facts: RequestFacts, requestId: string, withCode: boolean, format: ErrorFormat,
): { contentType: string; payload: string } {
  const statusLine = `${err.status} ${statusTitle(err.status)}`;
  if (format === 'json') return { contentType: 'application/json', payload: JSON.stringify(errorBody(err, facts, requestId, withCode)) };
  const text = body(err.status, escapeHtml(err.message), facts);
  if (format === 'html') {
    return {
      contentType: 'text/html; charset=UTF-8',
      payload: `<html>\n <head>\n  <title>${statusLine}</title>\n </head>\n <body>\n  <h1>${statusLine}</h1>\n  ${text}\n </body>\n</html>`,
    };
  }
  return { contentType: 'text/plain; charset=UTF-8', payload: `${statusLine}\n\n${stripTags(body(err.status, err.message, facts))}` };
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
