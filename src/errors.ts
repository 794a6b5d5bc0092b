import type { ProblemType } from '../contract/index.ts';

/**
 * An expected failure that reaches the caller as an RFC 7807 problem of the given type.
 * Raised anywhere (engine, store, HTTP); only the HTTP layer turns it into a response.
 */
export class DomainError extends Error {
  constructor(
    readonly type: ProblemType,
    readonly detail: string,
    readonly errors?: { path: string; message: string }[],
  ) {
    super(detail);
    this.name = 'DomainError';
  }

  /** The same problem, naming where in the request it lies (`writes[3].object`), in `detail` and `errors`. */
  at(path: string): DomainError {
    return new DomainError(this.type, `${path}: ${this.detail}`, [{ path, message: this.detail }]);
  }
}

/**
 * A request refused for now rather than kept waiting without end (503 `unavailable` with
 * Retry-After); `reason` names the cause in the log, where it stays apart from outages.
 */
export class RetryLater extends DomainError {
  constructor(
    detail: string,
    readonly reason: string,
  ) {
    super('unavailable', detail);
    this.name = 'RetryLater';
  }
}
