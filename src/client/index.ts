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
import { initClient, type AppRoute } from '@ts-rest/core';
import { CONSISTENCY_HEADER, contract, REVISION_HEADER, type RouteMetadata } from '../../contract/index.ts';
import { clientBasic, credentialsOf } from './credentials.ts';
import type { ClientOptions, GrantdClient } from './grantd-client.ts';
import { followChanges, pages } from './pagination.ts';
import { consistencyHeader, pathParam, withIsoTimes } from './requests.ts';
import { createTransport, defaultSleep, DEFAULT_TIMEOUT_MS, retryPolicy, type CallContext } from './transport.ts';
import type { CallOptions, ReadOptions, SuccessBody, Written } from './types.ts';

export { NetworkError, NO_STATUS, ProblemError, ServiceError, TimeoutError, UnexpectedResponseError, type ProblemIssue } from './errors.ts';
export type { ClientOptions, GrantdClient } from './grantd-client.ts';
export { createPublicOAuthClient, type PublicClientOptions, type PublicOAuthClient, type TokenSet } from './public-client.ts';
export { parseRetryAfter, type FetchLike, type RetryPolicy, type Sleep } from './transport.ts';
export type {
  Agent,
  AgentDeletion,
  AgentInput,
  AgentPage,
  AgentsQuery,
  CallOptions,
  Change,
  ChangePage,
  ChangesQuery,
  CheckBulkInput,
  CheckBulkResult,
  CheckInput,
  CheckResult,
  Consistency,
  CreatedKey,
  CreatedOAuthClient,
  Explanation,
  FollowOptions,
  Grant,
  GrantBatchInput,
  GrantBatchResult,
  GrantInput,
  GrantPage,
  GrantsQuery,
  GrantTriple,
  KeyInput,
  KeyList,
  Namespace,
  NamespaceInput,
  NamespaceList,
  NamespaceUpdate,
  OAuthClientInput,
  OAuthClientList,
  ObjectPage,
  ObjectsQuery,
  ReadOptions,
  Revision,
  SubjectPage,
  SubjectsQuery,
  WindowBound,
  Written,
} from './types.ts';

export const DEFAULT_BASE_URL = 'http://localhost:8080';
export { DEFAULT_TIMEOUT_MS };

/** Calls that may be repeated without changing the outcome: every GET, PUT and DELETE, and the POSTs the contract says are. */
const isIdempotent = (route: AppRoute): boolean =>
  route.method === 'GET' || route.method === 'DELETE' || route.method === 'PUT' || (route.metadata as RouteMetadata | undefined)?.idempotent === true;

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
    follow: (options = {}) => followChanges((query, o) => changes.list(query, o), sleep, options),
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
