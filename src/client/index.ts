/**
 * `grantd/client`: the official TypeScript client of grantd.
 *
 * Derived from the same ts-rest contract as the server (every request and response type below is
 * inferred from it), and built on nothing but `fetch`, `AbortController`, timers, `URL` and
 * `Headers`, so it runs on Node.js 20+, Deno, Bun, browsers and edge runtimes.
 *
 * ```ts
 * import { createClient, ProblemError, ServiceError } from 'grantd/client';
 *
 * const grantd = createClient({ apiKey: process.env.GRANTD_KEY!, baseUrl: 'http://localhost:8080' });
 * // or as an OAuth client, fetching and renewing its own access tokens:
 * const reports = createClient({ clientId: 'oc_...', clientSecret: 'svc_cs_...', scope: 'check:read' });
 * await grantd.namespaces.create({ name: 'document' });
 * await grantd.grants.create({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' });
 * const { allowed } = await grantd.check({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' });
 * for await (const id of grantd.objects.iterate({ namespace: 'document', subject: 'user:alice', relation: 'viewer' })) {
 *   console.log(id);
 * }
 * ```
 *
 * Every method takes an optional last argument {@link CallOptions} (`{ timeoutMs }`), resolves to
 * the success body of its endpoint (nothing for the 204 endpoints), and rejects with a
 * {@link ServiceError} subclass:
 * - {@link ProblemError}: grantd answered with a problem (`type` such as `namespace-not-found`,
 *   `insufficient-scope`, `invalid-request` with `errors`, ...), `status` the HTTP status;
 * - {@link UnexpectedResponseError} (a ProblemError): a response that is not a problem document,
 *   e.g. a proxy's HTML 502; `type` `unexpected-response`;
 * - {@link TimeoutError}: `type` `timeout`, `status` 0: the call's time budget ran out;
 * - {@link NetworkError}: `type` `network-error`, `status` 0: no response on the last attempt.
 *
 * Revisions (docs/consistency.md#revisions): every write resolves with `revision`, the opaque token
 * of a state that includes it (null if a proxy dropped the header). Every read takes `consistency`:
 * `{ atLeast: revision }` answers from a state that includes that revision on any node (waiting up
 * to 2 s, else 503 `unavailable`, retried), `'full'` from the database's state at the call.
 * `changes.list` reads one page of the tenant's changes feed; `changes.follow` is an async iterator
 * over every change from `after` on, polling for new ones until its `signal` aborts.
 *
 * Pagination: `grants.list`, `objects.list`, `subjects.list` and `agents.list` return one page (`next_cursor` is
 * null on the last); `grants.iterate`, `objects.iterate`, `subjects.iterate` and `agents.iterate` take the same query
 * and are async iterators over the items of every page, following `next_cursor` (use them with
 * `for await`; breaking out of the loop fetches no further page).
 *
 * Timeout: `timeoutMs` (default 5000, per client or per call) bounds the whole call, retries and
 * waits included. When it expires the call rejects at once with a TimeoutError and the request in
 * flight is aborted.
 *
 * Credentials: `apiKey` or `accessToken` is sent as it is, and a 401 is final. With `clientId` and
 * `clientSecret` the client fetches an access token by client_credentials (HTTP Basic) before its
 * first call, renews it a minute before it expires, and after a 401 renews it and sends the request
 * once more (a refused request changed nothing). OAuth errors of the token endpoint reject as
 * ProblemErrors whose `type` is the RFC 6749 code (`invalid_client`, `invalid_scope`, ...).
 *
 * Retries: only idempotent calls are retried: every GET, PUT and DELETE, `check`, `checkBulk`, `explain`
 * and `grants.create`; never `namespaces.create`, `agents.create`, `keys.create` or `grants.batch`. They
 * are retried after a network error, a 5xx or a 429, at most 3 times (4 attempts in all), waiting
 * the response's `Retry-After` (seconds or HTTP-date) when it has one, else an exponential backoff
 * with jitter (100 ms doubling, each wait drawn from [d/2, d], capped at 2 s). When the wait would
 * outlast the timeout, the call does not wait and rejects with the last error instead (for
 * instance the 429 `rate-limited` problem).
 *
 * @module
 */
import { initClient, type AppRoute, type ClientInferRequest, type ClientInferResponseBody } from '@ts-rest/core';
import { CONSISTENCY_HEADER, contract, REVISION_HEADER, type RouteMetadata } from '../../contract/index.ts';
import { bearer, clientBasic, fetchedTokens, type Credentials } from './credentials.ts';
import {
  createTransport,
  defaultSleep,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_MS,
  MAX_RETRIES,
  type CallContext,
  type FetchLike,
  type RetryPolicy,
  type Sleep,
} from './transport.ts';

export { NetworkError, NO_STATUS, ProblemError, ServiceError, TimeoutError, UnexpectedResponseError, type ProblemIssue } from './errors.ts';
export { parseRetryAfter, type FetchLike, type RetryPolicy, type Sleep } from './transport.ts';
export { createPublicOAuthClient, type PublicClientOptions, type PublicOAuthClient, type TokenSet } from './public-client.ts';

export const DEFAULT_BASE_URL = 'http://localhost:8080';
/** How long changes.follow waits before polling again at the end of the feed, by default. */
const FOLLOW_INTERVAL_MS = 1000;
/** The server's page size without `limit`. */
const DEFAULT_PAGE = 100;
export { DEFAULT_TIMEOUT_MS };

type Routes = typeof contract;
type SuccessStatus<R extends AppRoute> = Extract<keyof R['responses'], 200 | 201>;
/** The JSON body a route's request takes, as the contract declares it. */
type RequestBody<R extends AppRoute> = ClientInferRequest<R> extends { body: infer B } ? B : never;
/** The query a route takes, as the contract declares it. */
type RequestQuery<R extends AppRoute> = ClientInferRequest<R> extends { query: infer Q } ? Q : never;
/** The body of a route's success response, as the contract declares it. */
type SuccessBody<R extends AppRoute> = ClientInferResponseBody<R, SuccessStatus<R>>;

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

/** Who the client is: exactly one of `apiKey`, `accessToken`, or `clientId` with `clientSecret`. */
export interface ClientOptions {
  /** An API key secret (`svc_live_...`), sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** An access token (`svc_at_...`), sent as it is; not renewed. */
  accessToken?: string;
  /** A confidential OAuth client (`oc_...`) whose tokens the client fetches and renews itself. */
  clientId?: string;
  clientSecret?: string;
  /** With `clientId`: space-separated scopes to ask for (default: every scope of the client). */
  scope?: string;
  /** Where grantd listens, without `/v1`. Default `http://localhost:8080`. */
  baseUrl?: string;
  /** Default time budget of each call in ms, retries included (default 5000). */
  timeoutMs?: number;
  /** Retry tuning; `maxRetries` may be lowered (0 disables retries) but not raised above 3. */
  retry?: Partial<RetryPolicy>;
  /** The fetch to use (default: the global `fetch`, looked up at each call). */
  fetch?: FetchLike;
  /** How to wait between attempts (default: a timer). Meant for tests; the timeout still applies. */
  sleep?: Sleep;
  /** Source of backoff jitter in [0, 1) (default `Math.random`). Meant for tests. */
  random?: () => number;
}

export interface GrantdClient {
  /** POST /v1/check: does `subject` hold `relation` on `object`? Resolves to `{ allowed }`. Retried. */
  check(input: CheckInput, options?: ReadOptions): Promise<CheckResult>;
  /** POST /v1/check/bulk: 1 to 1000 checks, answered in order (`{ results }`). Retried. */
  checkBulk(input: CheckBulkInput, options?: ReadOptions): Promise<CheckBulkResult>;
  /** POST /v1/check/explain: the check's answer and why (`{ allowed, path, reason }`). Retried. */
  explain(input: CheckInput, options?: ReadOptions): Promise<Explanation>;
  grants: {
    /**
     * POST /v1/grants: creates the grant, or returns the existing one (idempotent, so retried); with
     * `not_before` and `expires_at` (Dates or ISO 8601 UTC strings), in force only between them, and
     * other times than the existing grant's replace them.
     */
    create(input: GrantInput, options?: CallOptions): Promise<Written<Grant>>;
    /** DELETE /v1/grants: removes the grant; resolves also when it did not exist. Retried. */
    revoke(input: GrantTriple, options?: CallOptions): Promise<Written>;
    /** GET /v1/grants: one page of grants (`{ grants, next_cursor }`); every filter is optional. Retried. */
    list(query?: GrantsQuery, options?: ReadOptions): Promise<GrantPage>;
    /**
     * Every grant matching `query`, page after page: follows `next_cursor` until it is null,
     * starting at `query.cursor` if given. `query.limit` is the page size; `timeoutMs` applies to
     * each page request. Rejects (ends the loop) with the first page's error.
     */
    iterate(query?: GrantsQuery, options?: ReadOptions): AsyncGenerator<Grant, void, undefined>;
    /** POST /v1/grants/batch: writes and deletes applied all or nothing. Never retried. */
    batch(input: GrantBatchInput, options?: CallOptions): Promise<Written<GrantBatchResult>>;
  };
  objects: {
    /** GET /v1/objects: one page of the object ids `subject` reaches (`{ namespace, objects, next_cursor }`). Retried. */
    list(query: ObjectsQuery, options?: ReadOptions): Promise<ObjectPage>;
    /**
     * Every object id `subject` reaches under `relation` in `namespace`, ascending, page after
     * page (follows `next_cursor`, starting at `query.cursor` if given; `query.limit` is the page
     * size; `timeoutMs` applies to each page request).
     */
    iterate(query: ObjectsQuery, options?: ReadOptions): AsyncGenerator<string, void, undefined>;
  };
  subjects: {
    /** GET /v1/subjects: one page of the subjects holding `relation` on `object` (`{ object, relation, subjects, next_cursor }`). Retried. */
    list(query: SubjectsQuery, options?: ReadOptions): Promise<SubjectPage>;
    /**
     * Every subject of `subject_namespace` holding `relation` on `object` (`user:alice`, ...),
     * ascending, page after page (follows `next_cursor`, starting at `query.cursor` if given;
     * `query.limit` is the page size; `timeoutMs` applies to each page request).
     */
    iterate(query: SubjectsQuery, options?: ReadOptions): AsyncGenerator<string, void, undefined>;
  };
  namespaces: {
    /** GET /v1/namespaces: `{ namespaces }`, built-in `user` and `agent` included. Retried. */
    list(options?: ReadOptions): Promise<NamespaceList>;
    /** POST /v1/namespaces: creates a namespace (409 `namespace-exists` if it exists). Never retried. */
    create(input: NamespaceInput, options?: CallOptions): Promise<Written<Namespace>>;
    /** GET /v1/namespaces/{name}: the namespace (404 `namespace-not-found`). Retried. */
    get(name: string, options?: ReadOptions): Promise<Namespace>;
    /**
     * PUT /v1/namespaces/{name}: replaces its definition (`{ relations }`, or `{}` to open it); 409
     * `namespace-in-use` when grants use a relation it would drop. Retried (the same definition twice is one change).
     */
    update(name: string, input: NamespaceUpdate, options?: CallOptions): Promise<Written<Namespace>>;
    /** DELETE /v1/namespaces/{name}: 409 `namespace-in-use` while grants name it. Retried. */
    delete(name: string, options?: CallOptions): Promise<Written>;
  };
  agents: {
    /** POST /v1/agents: registers an agent (409 `agent-exists` if it exists). Never retried. */
    create(input: AgentInput, options?: CallOptions): Promise<Written<Agent>>;
    /**
     * GET /v1/agents/{external_id}: the agent (404 `agent-not-found`). Retried. The id is
     * percent-encoded; `""`, `.` and `..` cannot form a path and are rejected with a TypeError.
     */
    get(externalId: string, options?: ReadOptions): Promise<Agent>;
    /** GET /v1/agents: one page of agents (`{ agents, next_cursor }`). Retried. */
    list(query?: AgentsQuery, options?: ReadOptions): Promise<AgentPage>;
    /** Every agent, page after page (follows `next_cursor`; `timeoutMs` applies to each page request). */
    iterate(query?: AgentsQuery, options?: ReadOptions): AsyncGenerator<Agent, void, undefined>;
    /** DELETE /v1/agents/{external_id}: the killswitch; `{ external_id, grants_removed, clients_removed }`. Retried. Id as in `get`. */
    delete(externalId: string, options?: CallOptions): Promise<Written<AgentDeletion>>;
  };
  keys: {
    /** POST /v1/keys (admin): a new key; its `secret` is in this response only. Never retried. */
    create(input?: KeyInput, options?: CallOptions): Promise<Written<CreatedKey>>;
    /** GET /v1/keys (admin): `{ keys }`, live keys oldest first, never secrets. Retried. */
    list(options?: CallOptions): Promise<KeyList>;
    /** DELETE /v1/keys/{id} (admin): revokes the key (404 `key-not-found` if unknown or revoked). Retried. Id as in `agents.get`. */
    revoke(id: string, options?: CallOptions): Promise<Written>;
  };
  oauth: {
    clients: {
      /** POST /v1/oauth/clients (admin): a new client; a confidential one's `client_secret` is in this response only. Never retried. */
      create(input: OAuthClientInput, options?: CallOptions): Promise<Written<CreatedOAuthClient>>;
      /** GET /v1/oauth/clients (admin): `{ clients }`, never secrets. Retried. */
      list(options?: CallOptions): Promise<OAuthClientList>;
      /** DELETE /v1/oauth/clients/{client_id} (admin): the client and its tokens are gone (404 `client-not-found`). Retried. */
      delete(clientId: string, options?: CallOptions): Promise<Written>;
    };
  };
  changes: {
    /** GET /v1/changes (grant:read): one page of the tenant's changes after `after`, in commit order (`{ changes, next_revision }`). Retried. */
    list(query?: ChangesQuery, options?: CallOptions): Promise<ChangePage>;
    /**
     * Every change from `after` on, page after page, then each new one as it comes: polls with
     * `next_revision`, waiting `intervalMs` whenever the feed is read to its end, until `signal`
     * aborts. Each change carries its `revision`: a follower restarted with `after` the last one it
     * handled goes on with no gap and no repeat. Rejects with the first error of a page (a 410
     * `changes-expired` when `after` is older than the feed keeps).
     */
    follow(options?: FollowOptions): AsyncGenerator<Change, void, undefined>;
  };
}

/** Calls that may be repeated without changing the outcome: every GET, PUT and DELETE, and the POSTs the contract says are. */
const isIdempotent = (route: AppRoute): boolean =>
  route.method === 'GET' || route.method === 'DELETE' || route.method === 'PUT' || (route.metadata as RouteMetadata | undefined)?.idempotent === true;

function retryPolicy(given: Partial<RetryPolicy> | undefined): RetryPolicy {
  const policy = { ...DEFAULT_RETRY, ...given };
  if (!Number.isInteger(policy.maxRetries) || policy.maxRetries < 0 || policy.maxRetries > MAX_RETRIES) {
    throw new RangeError(`retry.maxRetries must be an integer from 0 to ${MAX_RETRIES}`);
  }
  if (!(policy.baseDelayMs >= 0) || !(policy.maxDelayMs >= 0)) throw new RangeError('retry delays must be non-negative');
  return policy;
}

/**
 * A path parameter, percent-encoded (ts-rest inserts parameters as they are). An empty value, `.` or
 * `..` cannot be sent as a path segment (it would name another route), so it is refused.
 */
function pathParam(name: string, value: string): string {
  if (typeof value !== 'string' || value === '' || value === '.' || value === '..') {
    throw new TypeError(`${name} must be a non-empty string other than "." and "..", got ${JSON.stringify(value)}`);
  }
  return encodeURIComponent(value);
}

const given = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** The credentials the options name, exactly one kind of them; token requests go through `raw`. */
function credentialsOf(
  options: ClientOptions,
  fetchToken: (clientId: string, clientSecret: string, scope?: string) => Promise<{ access_token: string; expires_in: number }>,
): Credentials {
  const kinds = [given(options.apiKey), given(options.accessToken), given(options.clientId) || given(options.clientSecret)].filter(Boolean).length;
  if (kinds !== 1) throw new TypeError('createClient: give exactly one of apiKey, accessToken, or clientId with clientSecret');
  if (given(options.apiKey)) return bearer(options.apiKey);
  if (given(options.accessToken)) return bearer(options.accessToken);
  const { clientId, clientSecret, scope } = options;
  if (!given(clientId) || !given(clientSecret)) throw new TypeError('createClient: clientId and clientSecret go together');
  return fetchedTokens(() => fetchToken(clientId, clientSecret, scope));
}

/** Creates a client for the grantd at `options.baseUrl`, authenticated as `options` say (ClientCredentials). */
export function createClient(options: ClientOptions): GrantdClient {
  if (!options) throw new TypeError('createClient: options are required');
  const baseUrl = new URL(options.baseUrl ?? DEFAULT_BASE_URL).toString().replace(/\/+$/, '');
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) {
    throw new RangeError(`timeoutMs must be a positive number of milliseconds, got ${String(options.timeoutMs)}`);
  }
  const givenFetch = options.fetch;
  const credentials = credentialsOf(options, async (clientId, clientSecret, scope) =>
    ok(
      contract.oauth.token,
      await raw.oauth.token({
        body: { grant_type: 'client_credentials', ...(scope === undefined ? {} : { scope }) },
        extraHeaders: { authorization: clientBasic(clientId, clientSecret) },
      }),
    ),
  );
  const transport = createTransport({
    credentials,
    fetch: () => {
      if (givenFetch) return givenFetch;
      if (typeof fetch !== 'function') throw new TypeError('grantd client: no global fetch; pass options.fetch');
      return (input, init) => fetch(input, init);
    },
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    retry: retryPolicy(options.retry),
    sleep: options.sleep ?? defaultSleep,
    random: options.random ?? Math.random,
    isIdempotent,
  });
  const raw = initClient(contract, {
    baseUrl,
    baseHeaders: { accept: 'application/json, application/problem+json' },
    api: transport,
    validateResponse: false,
    throwOnUnknownStatus: false,
  });

  // The transport resolves only with a declared success response of the route, so its body has the
  // contract's success type; every other outcome was thrown as a ServiceError.
  const ok = <R extends AppRoute>(_route: R, response: { body: unknown }): SuccessBody<R> => response.body as SuccessBody<R>;
  const call = (options: CallOptions | undefined): CallContext => ({ timeoutMs: options?.timeoutMs });
  // A write's body with the revision its response named.
  const written = <R extends AppRoute>(route: R, response: { body: unknown; headers: Headers }): Written<SuccessBody<R> & object> => ({
    ...(ok(route, response) as SuccessBody<R> & object),
    revision: response.headers.get(REVISION_HEADER),
  });
  const revisionOnly = (response: { headers: Headers }): Written => ({ revision: response.headers.get(REVISION_HEADER) });
  // A read's call context and the Grantd-Consistency it asks for.
  const read = (options: ReadOptions | undefined) => ({
    call: call(options),
    ...(options?.consistency === undefined ? {} : { extraHeaders: { [CONSISTENCY_HEADER]: consistencyHeader(options.consistency) } }),
  });

  async function* pages<Q extends { cursor?: string | undefined }, P extends { next_cursor: string | null }>(
    list: (query: Q, options?: CallOptions) => Promise<P>,
    query: Q,
    options: CallOptions | undefined,
  ): AsyncGenerator<P, void, undefined> {
    let cursor = query.cursor;
    for (;;) {
      const page = await list({ ...query, cursor }, options);
      yield page;
      if (page.next_cursor === null) return;
      cursor = page.next_cursor;
    }
  }

  const grants: GrantdClient['grants'] = {
    create: async (input, options) => written(contract.grants.create, await raw.grants.create({ body: withIsoTimes(input), call: call(options) })),
    revoke: async (input, options) => revisionOnly(await raw.grants.revoke({ body: input, call: call(options) })),
    list: async (query = {}, options) => ok(contract.grants.list, await raw.grants.list({ query, ...read(options) })),
    iterate: async function* (query = {}, options) {
      for await (const page of pages((q, o) => grants.list(q, o), query, options)) yield* page.grants;
    },
    batch: async ({ writes, ...rest }, options) =>
      written(
        contract.grants.batch,
        await raw.grants.batch({ body: { ...rest, ...(writes ? { writes: writes.map(withIsoTimes) } : {}) }, call: call(options) }),
      ),
  };

  const objects: GrantdClient['objects'] = {
    list: async (query, options) => ok(contract.objects.list, await raw.objects.list({ query, ...read(options) })),
    iterate: async function* (query, options) {
      for await (const page of pages((q, o) => objects.list(q, o), query, options)) yield* page.objects;
    },
  };

  const subjects: GrantdClient['subjects'] = {
    list: async (query, options) => ok(contract.subjects.list, await raw.subjects.list({ query, ...read(options) })),
    iterate: async function* (query, options) {
      for await (const page of pages((q, o) => subjects.list(q, o), query, options)) yield* page.subjects;
    },
  };

  const agents: GrantdClient['agents'] = {
    create: async (input, options) => written(contract.agents.create, await raw.agents.create({ body: input, call: call(options) })),
    get: async (externalId, options) =>
      ok(contract.agents.get, await raw.agents.get({ params: { external_id: pathParam('externalId', externalId) }, ...read(options) })),
    list: async (query = {}, options) => ok(contract.agents.list, await raw.agents.list({ query, ...read(options) })),
    iterate: async function* (query = {}, options) {
      for await (const page of pages((q, o) => agents.list(q, o), query, options)) yield* page.agents;
    },
    delete: async (externalId, options) =>
      written(contract.agents.delete, await raw.agents.delete({ params: { external_id: pathParam('externalId', externalId) }, call: call(options) })),
  };

  const sleep = options.sleep ?? defaultSleep;
  const changes: GrantdClient['changes'] = {
    list: async (query = {}, options) => ok(contract.changes.list, await raw.changes.list({ query, call: call(options) })),
    follow: async function* ({ after, limit, intervalMs = FOLLOW_INTERVAL_MS, signal, timeoutMs } = {}) {
      const stop = signal ?? new AbortController().signal;
      let position = after;
      while (!stop.aborted) {
        const page = await changes.list(
          { ...(position === undefined ? {} : { after: position }), ...(limit === undefined ? {} : { limit }) },
          { ...(timeoutMs === undefined ? {} : { timeoutMs }) },
        );
        for (const change of page.changes) {
          if (stop.aborted) return;
          yield change;
        }
        position = page.next_revision;
        // A full page: more may wait; else the feed is read to its end for now.
        if (page.changes.length < (limit ?? DEFAULT_PAGE)) await sleep(intervalMs, stop).catch(() => undefined);
      }
    },
  };

  return {
    check: async (input, options) => ok(contract.check, await raw.check({ body: input, ...read(options) })),
    checkBulk: async (input, options) => ok(contract.checkBulk, await raw.checkBulk({ body: input, ...read(options) })),
    explain: async (input, options) => ok(contract.explain, await raw.explain({ body: input, ...read(options) })),
    grants,
    objects,
    subjects,
    namespaces: {
      list: async (options) => ok(contract.namespaces.list, await raw.namespaces.list(read(options))),
      create: async (input, options) => written(contract.namespaces.create, await raw.namespaces.create({ body: input, call: call(options) })),
      get: async (name, options) =>
        ok(contract.namespaces.get, await raw.namespaces.get({ params: { name: pathParam('name', name) }, ...read(options) })),
      update: async (name, input, options) =>
        written(
          contract.namespaces.update,
          await raw.namespaces.update({ params: { name: pathParam('name', name) }, body: input, call: call(options) }),
        ),
      delete: async (name, options) => revisionOnly(await raw.namespaces.delete({ params: { name: pathParam('name', name) }, call: call(options) })),
    },
    agents,
    keys: {
      create: async (input = {}, options) => written(contract.keys.create, await raw.keys.create({ body: input, call: call(options) })),
      list: async (options) => ok(contract.keys.list, await raw.keys.list({ call: call(options) })),
      revoke: async (id, options) => revisionOnly(await raw.keys.revoke({ params: { id: pathParam('id', id) }, call: call(options) })),
    },
    oauth: {
      clients: {
        create: async (input, options) =>
          written(contract.oauth.clients.create, await raw.oauth.clients.create({ body: input, call: call(options) })),
        list: async (options) => ok(contract.oauth.clients.list, await raw.oauth.clients.list({ call: call(options) })),
        delete: async (clientId, options) =>
          revisionOnly(await raw.oauth.clients.delete({ params: { client_id: pathParam('clientId', clientId) }, call: call(options) })),
      },
    },
    changes,
  };
}

/** The Grantd-Consistency header a consistency asks for. */
function consistencyHeader(consistency: Consistency): string {
  if (consistency === 'full') return 'full';
  if (typeof consistency?.atLeast !== 'string' || consistency.atLeast === '') {
    throw new TypeError("consistency must be 'full' or { atLeast: <revision> }");
  }
  return `at-least ${consistency.atLeast}`;
}

/** The grant with its Date bounds as the ISO 8601 UTC strings the API takes. */
function withIsoTimes(input: GrantInput): RequestBody<Routes['grants']['create']> {
  const { not_before, expires_at, ...triple } = input;
  const iso = (bound: WindowBound) => (bound instanceof Date ? bound.toISOString() : bound);
  return {
    ...triple,
    ...(not_before !== undefined ? { not_before: iso(not_before) } : {}),
    ...(expires_at !== undefined ? { expires_at: iso(expires_at) } : {}),
  };
}
