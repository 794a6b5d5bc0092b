import type { ProblemType } from '../contract/index.ts';

/**
 * An expected failure that reaches the caller as an RFC 7807 problem of the given type.
 * Raised anywhere (engine, store, HTTP); only the HTTP layer turns it into a response.
 */
export class DomainError extends Error {
  constructor(
    readonly type: ProblemType,
    readonly detail: string,
    readonly errors?: Array<{ path: string; message: string }>,
  ) {
    super(detail);
    this.name = 'DomainError';
  }
}
