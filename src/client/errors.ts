// Errors thrown by the grantd client. Everything here must run on edge runtimes: no Node-only API.

/** A validation failure listed in a problem's `errors` (field path and message). */
export interface ProblemIssue {
  path: string;
  message: string;
}

/** Status carried by errors that have no HTTP response: {@link TimeoutError} and {@link NetworkError}. */
export const NO_STATUS = 0;

/**
 * Base class of every error the client throws for a failed call.
 *
 * - `type`: short kebab-case identifier. For a response from grantd it is the problem type
 *   (`namespace-not-found`, `insufficient-scope`, ...); the client adds `timeout`, `network-error`
 *   and `unexpected-response`.
 * - `status`: HTTP status of the response, or `0` when there was no response (timeout, network).
 * - `title`: short summary of the type; `detail`: what went wrong with this call.
 * - `attempts`: how many HTTP requests the call made (1 plus the retries).
 */
export class ServiceError extends Error {
  readonly type: string;
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly attempts: number;

  constructor(fields: { type: string; status: number; title: string; detail: string; attempts: number }, options?: { cause?: unknown }) {
    super(`${fields.title}: ${fields.detail}`, options);
    this.name = 'ServiceError';
    this.type = fields.type;
    this.status = fields.status;
    this.title = fields.title;
    this.detail = fields.detail;
    this.attempts = fields.attempts;
  }
}

/**
 * The service answered with an error response. For grantd's own RFC 7807 problems
 * (`application/problem+json`) `type`, `title`, `status`, `detail` and `errors` are the problem's;
 * `requestId` is the response's `X-Request-Id` (quote it when reporting an `internal` error).
 */
export class ProblemError extends ServiceError {
  /** Validation failures, present on `invalid-request` and the other 400 problems that list them. */
  readonly errors: ProblemIssue[] | undefined;
  readonly requestId: string | undefined;

  constructor(fields: {
    type: string;
    status: number;
    title: string;
    detail: string;
    attempts: number;
    errors?: ProblemIssue[] | undefined;
    requestId?: string | undefined;
  }) {
    super(fields);
    this.name = 'ProblemError';
    this.errors = fields.errors;
    this.requestId = fields.requestId;
  }
}

/**
 * An error response that is not a problem document (for instance a proxy's HTML 502 page), or a
 * success response the client cannot read (not JSON, or a status the contract does not declare).
 * `type` is `unexpected-response`, `status` the HTTP status, `title` `HTTP <status>`, and `detail`
 * the start of the body. It is a {@link ProblemError}, so code that handles problems by status
 * handles it too.
 */
export class UnexpectedResponseError extends ProblemError {
  static readonly TYPE = 'unexpected-response';

  constructor(fields: { status: number; detail: string; attempts: number; requestId?: string | undefined }) {
    super({ ...fields, type: UnexpectedResponseError.TYPE, title: `HTTP ${fields.status}` });
    this.name = 'UnexpectedResponseError';
  }
}

/** The call's time budget (`timeoutMs`, retries included) ran out. `type` `timeout`, `status` 0. */
export class TimeoutError extends ServiceError {
  static readonly TYPE = 'timeout';
  readonly timeoutMs: number;

  constructor(timeoutMs: number, attempts: number) {
    super({ type: TimeoutError.TYPE, status: NO_STATUS, title: 'Timeout', detail: `no answer within ${timeoutMs} ms`, attempts });
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The request failed without an HTTP response (connection refused or reset, DNS failure, ...)
 * on its last attempt. `type` `network-error`, `status` 0; `cause` is the underlying error.
 * For a call that is not retried (a non-idempotent POST) the request may or may not have been applied.
 */
export class NetworkError extends ServiceError {
  static readonly TYPE = 'network-error';

  constructor(cause: unknown, attempts: number) {
    super({ type: NetworkError.TYPE, status: NO_STATUS, title: 'Network error', detail: describeCause(cause), attempts }, { cause });
    this.name = 'NetworkError';
  }
}

function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  const inner = (cause as { cause?: unknown }).cause;
  const code = inner && typeof inner === 'object' && 'code' in inner ? ` (${String(inner.code)})` : '';
  const innerMessage = inner instanceof Error && inner.message !== cause.message ? `: ${inner.message}` : '';
  return `${cause.message}${innerMessage}${code}`;
}
