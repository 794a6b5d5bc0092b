import type { KeyScope } from './scopes.ts';

/**
 * Whether a route reads (it takes Grantd-Consistency) or writes (it answers with Grantd-Revision):
 * docs/consistency.md#revisions.
 */
export type Revisions = 'reads' | 'writes';

/**
 * What a write can leave stale in the memory of the processes serving the API: grants (agents
 * included, which are checked like grants), namespaces (the definitions checks follow), keys (API
 * keys and access tokens held as verified).
 */
export type Cached = 'grants' | 'namespaces' | 'keys';

/**
 * A route's obligations, read by the server (authentication, src/http/writes.ts), the OpenAPI
 * generator and the client.
 */
export interface RouteMetadata {
  /** The key scope a caller needs. */
  scope: KeyScope;
  revisions?: Revisions;
  /**
   * For a write: what its success leaves stale, announced to every process before it is answered, so
   * that the caller's next request sees it wherever it lands. Empty when nothing held in memory changes.
   */
  invalidates?: readonly Cached[];
  /** A POST that may be sent again with the outcome of sending it once, which clients retry (GET, PUT and DELETE are by their method). */
  idempotent?: true;
}

interface Options {
  idempotent?: true;
}

/** The metadata of a route that writes nothing: the scope it needs, whether it reads at a revision. */
export const requires = (scope: KeyScope, revisions?: 'reads', options: Options = {}): RouteMetadata => ({
  scope,
  ...(revisions ? { revisions } : {}),
  ...options,
});

/** The metadata of a route that writes: the scope it needs, and what its success leaves stale (none may be forgotten). */
export const writes = (scope: KeyScope, obligations: Options & { invalidates: readonly Cached[] }): RouteMetadata => ({
  scope,
  revisions: 'writes',
  ...obligations,
});
