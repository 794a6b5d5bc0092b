// The client's data types, each inferred from the contract (nothing here re-declares a shape), and
// the options every call takes.
import type { AppRoute, ClientInferRequest, ClientInferResponseBody } from '@ts-rest/core';
import type { contract } from '../../contract/index.ts';

export type Routes = typeof contract;
type SuccessStatus<R extends AppRoute> = Extract<keyof R['responses'], 200 | 201>;
/** The JSON body a route's request takes, as the contract declares it. */
export type RequestBody<R extends AppRoute> = ClientInferRequest<R> extends { body: infer B } ? B : never;
/** The query a route takes, as the contract declares it. */
type RequestQuery<R extends AppRoute> = ClientInferRequest<R> extends { query: infer Q } ? Q : never;
/** The body of a route's success response, as the contract declares it. */
export type SuccessBody<R extends AppRoute> = ClientInferResponseBody<R, SuccessStatus<R>>;

export type CheckInput = RequestBody<Routes['check']>;
export type CheckResult = SuccessBody<Routes['check']>;
export type CheckBulkInput = RequestBody<Routes['checkBulk']>;
export type CheckBulkResult = SuccessBody<Routes['checkBulk']>;
/** A window bound (docs/model.md#time-bound-grants): an ISO 8601 UTC string, or a Date sent as one; null or absent: open. */
export type WindowBound = string | Date | null | undefined;
type WithDates<T> = Omit<T, 'not_before' | 'expires_at'> & { not_before?: WindowBound; expires_at?: WindowBound };
/** A grant to write: the contract's, its times as strings or Dates. */
export type GrantInput = WithDates<RequestBody<Routes['grants']['create']>>;
/** A grant to revoke: its triple. */
export type GrantTriple = RequestBody<Routes['grants']['revoke']>;
export type Grant = SuccessBody<Routes['grants']['create']>;
export type GrantsQuery = RequestQuery<Routes['grants']['list']>;
export type GrantPage = SuccessBody<Routes['grants']['list']>;
export type GrantBatchInput = Omit<RequestBody<Routes['grants']['batch']>, 'writes'> & { writes?: GrantInput[] | undefined };
export type GrantBatchResult = SuccessBody<Routes['grants']['batch']>;
export type ObjectsQuery = RequestQuery<Routes['objects']['list']>;
export type ObjectPage = SuccessBody<Routes['objects']['list']>;
export type SubjectsQuery = RequestQuery<Routes['subjects']['list']>;
export type SubjectPage = SuccessBody<Routes['subjects']['list']>;
export type Explanation = SuccessBody<Routes['explain']>;
export type NamespaceInput = RequestBody<Routes['namespaces']['create']>;
export type Namespace = SuccessBody<Routes['namespaces']['create']>;
export type NamespaceList = SuccessBody<Routes['namespaces']['list']>;
export type NamespaceUpdate = RequestBody<Routes['namespaces']['update']>;
export type AgentInput = RequestBody<Routes['agents']['create']>;
export type Agent = SuccessBody<Routes['agents']['get']>;
export type AgentsQuery = RequestQuery<Routes['agents']['list']>;
export type AgentPage = SuccessBody<Routes['agents']['list']>;
export type AgentDeletion = SuccessBody<Routes['agents']['delete']>;
export type KeyInput = RequestBody<Routes['keys']['create']>;
export type CreatedKey = SuccessBody<Routes['keys']['create']>;
export type KeyList = SuccessBody<Routes['keys']['list']>;
export type OAuthClientInput = RequestBody<Routes['oauth']['clients']['create']>;
export type CreatedOAuthClient = SuccessBody<Routes['oauth']['clients']['create']>;
export type OAuthClientList = SuccessBody<Routes['oauth']['clients']['list']>;

export type ChangesQuery = RequestQuery<Routes['changes']['list']>;
export type ChangePage = SuccessBody<Routes['changes']['list']>;
export type Change = ChangePage['changes'][number];

/** An opaque revision: a write's `revision`, a change's, or a page's `next_revision`. */
export type Revision = string;
/** What a write resolves with: its body, and the revision that includes it (null if the response carried none). */
export type Written<T extends object = object> = T & { revision: Revision | null };
/** How fresh a read's answer must be: from a state including a revision, or the database's state at the call. */
export type Consistency = { atLeast: Revision } | 'full';

/** Options of one call; every method takes them as its last, optional argument. */
export interface CallOptions {
  /**
   * Time budget of the whole call in milliseconds, retries included (default: the client's
   * `timeoutMs`, 5000). Must be positive; `Infinity` means no timeout.
   */
  timeoutMs?: number;
}

/** Options of a read: a call's, and the consistency its answer needs (default: the server's usual bound). */
export interface ReadOptions extends CallOptions {
  consistency?: Consistency;
}

/** Options of `changes.follow`. */
export interface FollowOptions extends CallOptions {
  /** Start after this revision (default: the oldest change kept). */
  after?: Revision;
  /** Page size, 1 to 1000 (default 100). */
  limit?: number;
  /** How long to wait before polling again once the feed is read to its end (default 1000 ms). */
  intervalMs?: number;
  /** Ends the iteration: at once while waiting to poll, else after the page under way. */
  signal?: AbortSignal;
}
