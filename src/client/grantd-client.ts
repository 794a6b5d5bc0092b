// The client's surface: the options createClient takes and the methods of the client it returns.
import type { ClientCredentials } from './credentials.ts';
import type { FetchLike, RetryPolicy, Sleep } from './transport.ts';
import type {
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
  SubjectPage,
  SubjectsQuery,
  Written,
} from './types.ts';

/** Who the client is (ClientCredentials), where grantd is, and how calls are timed and retried. */
export interface ClientOptions extends ClientCredentials {
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
