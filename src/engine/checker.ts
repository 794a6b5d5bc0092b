import type { DomainError } from '../errors.ts';
import type { Explanation } from './explanation.ts';
import type { Ref, Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';

/**
 * What the engine asks of a tenant's namespaces and grants, as small ports (docs/decisions.md#the-path-of-one-check).
 * Each is answered by whichever store holds the tenant best: memory, the answer cache or PostgreSQL,
 * chained as OpenFGA chains its check resolvers (each hands what it cannot answer to a delegate); src/store/check-router.ts
 * builds the chain, src/cli/model-test.ts a model file's. Every call is confined to one tenant.
 */
export interface Checker {
  readonly schemas: SchemaSource;
  readonly checks: CheckResolver;
  readonly walks: ListingWalks;
  readonly candidates: Candidates;
  readonly explainer: Explainer;
  /** This node changed the tenant's data (committed): nothing read before may answer for it. */
  invalidate(tenantId: string): void;
}

/** The tenant's namespaces, compiled. */
export interface SchemaSource {
  /** As loaded less than `maxAgeMs` ago (default: the freshness bound). */
  get(tenantId: string, options?: { maxAgeMs?: number }): Promise<CompiledSchema>;
  /** What `get` would give, when it is at hand with no promise to wait for; else undefined. */
  getNow?(tenantId: string): CompiledSchema | undefined;
}

/** One way to answer checks: in memory, from cached answers, in PostgreSQL (OpenFGA's CheckResolver). */
export interface CheckResolver {
  /**
   * For each query, whether it is allowed (the graph, and for an agent subject its registration and
   * scope mask, read from one state of the tenant), or the check-too-complex problem of a query past
   * its work budget; at most one round trip for the lot.
   */
  check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckResponse>;
  /** What `check` would answer for [query], when it can be answered at once (a tenant held in memory); else undefined. */
  checkNow?(tenantId: string, schema: CompiledSchema, query: Triple): CheckAnswer | undefined;
}

/** A CheckResolver's answers, in the order of the queries. */
export interface CheckResponse {
  answers: CheckAnswer[];
  /**
   * Until when (epoch ms of the server's clock) the answers hold at the least, when the resolver
   * knows (PostgreSQL: the tenant's next window boundary, Infinity for none): a cache keeps them no
   * longer, and keeps none that do not say.
   */
  until?: number;
  /**
   * The steps the checks of relations with rules took in all, as their budgets count them (the rule
   * evaluator's): what a listing of such a relation bounds a page by (docs/checks-and-listings.md#what-a-page-costs).
   */
  ruledSteps?: number;
}

/** What the graph says of one query: allowed or not, or why it was not answered. */
export type CheckAnswer = boolean | DomainError;

/** The walks of listings, and what they cost beside a check. */
export interface ListingWalks {
  /**
   * Ids of `namespace` objects on which `subject` holds `relation`, ascending, after `after`, at
   * most `limit`, found by walking forwards from the subject (none for an agent its masks refuse,
   * read from the same state); null when the subject holds more than `budget` (object, relation)
   * pairs in all, which the walk does not go past.
   */
  reachable(tenantId: string, schema: CompiledSchema, query: ReachableQuery): Promise<string[] | null>;
  /**
   * Ids of `namespace` subjects that hold `relation` on `object`, themselves or through a group they
   * are a direct member of, ascending, after `after`, at most `limit`, found by walking backwards from
   * the object (agents: only registered ones whose scope covers it, read from the same state); null
   * when the walk would pass `budget` (object, relation) pairs, holders or members read, which it does not.
   */
  holders(tenantId: string, schema: CompiledSchema, query: HoldersQuery): Promise<string[] | null>;
  /** What a check of the tenant costs now, in (object, relation) pairs a walk visits for the same time. */
  pairsPerCheck(tenantId: string): number;
  /**
   * How much farther than PostgreSQL a listing of the tenant walks for the same cost (listing
   * budgets are in PostgreSQL's pairs): 1 there, more where a pair costs less (in memory).
   */
  walkScale(tenantId: string): number;
}

/** The candidates of a listing that walks no further: ids named by some grant, in order. */
export interface Candidates {
  /** Distinct ids of `namespace` objects named by some grant, ascending, after `after`, at most `limit`. */
  objectIds(tenantId: string, namespace: string, after: string | null, limit: number): Promise<string[]>;
  /** Distinct ids of `namespace` subjects named by some grant (for `agent`, and the registered agents), ascending, after `after`, at most `limit`. */
  subjectIds(tenantId: string, namespace: string, after: string | null, limit: number): Promise<string[]>;
}

export interface Explainer {
  /** Why the check is allowed or denied (explainCheck), read from one state of the tenant. */
  explain(tenantId: string, schema: CompiledSchema, query: Triple): Promise<Explanation>;
}

/** A listing walk: see ListingWalks.reachable. */
export interface ReachableQuery {
  subject: Ref;
  namespace: string;
  relation: string;
  after: string | null;
  limit: number;
  budget: number;
}

/** A listing walk from an object: see ListingWalks.holders. */
export interface HoldersQuery {
  object: Ref;
  relation: string;
  namespace: string;
  after: string | null;
  limit: number;
  budget: number;
}
