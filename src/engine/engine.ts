import type { z } from 'zod';
import type { BulkCheckResultSchema } from '../../contract/check.ts';
import { DomainError } from '../errors.ts';
import { parseRef, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';

/**
 * What the engine asks of a tenant's grants and namespaces: the one interface of the check path
 * (src/store/check-router.ts composes it: docs/decisions.md#the-path-of-one-check). Every call is
 * confined to one tenant.
 */
export interface Checker {
  /** The tenant's namespaces, compiled, as loaded less than `maxAgeMs` ago (default: the freshness bound). */
  schema(tenantId: string, options?: { maxAgeMs?: number }): Promise<CompiledSchema>;
  /**
   * For each query, whether it is allowed (the graph, and for an agent subject its registration and
   * scope mask, read from one state of the tenant), or the check-too-complex problem of a query past
   * its work budget; at most one round trip for the lot.
   */
  check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckAnswer[]>;
  /**
   * Ids of `namespace` objects on which `subject` holds `relation`, ascending, after `after`, at
   * most `limit`, found by walking forwards from the subject (none for an agent its masks refuse,
   * read from the same state); null when the subject holds more than `budget` (object, relation)
   * pairs in all, which the walk does not go past.
   */
  reachable(tenantId: string, schema: CompiledSchema, query: ReachableQuery): Promise<string[] | null>;
  /** Distinct ids of `namespace` objects named by some grant, ascending, after `after`, at most `limit`. */
  objectIds(tenantId: string, namespace: string, after: string | null, limit: number): Promise<string[]>;
  /** This node changed the tenant's data (committed): nothing read before may answer for it. */
  invalidate(tenantId: string): void;
  /** What a check of the tenant costs now, in (object, relation) pairs a walk visits for the same time. */
  pairsPerCheck(tenantId: string): number;
}

/** A listing walk: see Checker.reachable. */
export interface ReachableQuery {
  subject: Ref;
  namespace: string;
  relation: string;
  after: string | null;
  limit: number;
  budget: number;
}

/** What the graph says of one query: allowed or not, or why it was not answered. */
export type CheckAnswer = boolean | DomainError;

export interface CheckInput {
  subject: string;
  relation: string;
  object: string;
}

export type BulkResult = z.infer<typeof BulkCheckResultSchema>['results'][number];
type BulkItemErrorType = NonNullable<BulkResult['error']>['type'];

/**
 * The authorization graph: docs/model.md#what-a-check-means. Validation and the choice of queries
 * live here; the graph walk and the agent scope masks, read from one state of the tenant, are the Checker's.
 */
export class AuthorizationEngine {
  /** How much a listing walks forwards from a subject before it looks at candidates instead. */
  private readonly listingBudget: number;
  /** The most a listing walks once candidates have shown the subject to be sparse in the namespace. */
  private readonly maxListingBudget: number;

  constructor(
    readonly checker: Checker,
    { listingBudget = 10_000, maxListingBudget = 200_000 } = {},
  ) {
    this.listingBudget = listingBudget;
    this.maxListingBudget = maxListingBudget;
  }

  /** Forgets the answers derived from the tenant's data: every write on this node calls it once committed. */
  invalidate(tenantId: string): void {
    this.checker.invalidate(tenantId);
  }

  /**
   * The compiled schema, reloaded when it lacks one of `namespaces` (it may be new on another node)
   * unless it was loaded within ABSENT_RECHECK_MS: requests naming a namespace that does not exist
   * cost at most one reload per tenant in that time, however many there are.
   */
  private async schemaWith(tenantId: string, namespaces: Iterable<string>): Promise<CompiledSchema> {
    const schema = await this.checker.schema(tenantId);
    for (const ns of namespaces) {
      if (!schema.namespace(ns)) return this.checker.schema(tenantId, { maxAgeMs: ABSENT_RECHECK_MS });
    }
    return schema;
  }

  /** Parses triples (grants to write or delete); with `validate`, also requires each object's namespace and relation to exist. */
  async parseTriples(tenantId: string, inputs: readonly CheckInput[], validate: boolean): Promise<Triple[]> {
    const triples = inputs.map(parseTriple);
    if (validate) {
      const schema = await this.schemaWith(
        tenantId,
        triples.map((t) => t.object.ns),
      );
      for (const t of triples) schema.assertRelation(t.object.ns, t.relation);
    }
    return triples;
  }

  async check(tenantId: string, input: CheckInput): Promise<boolean> {
    const [result] = await this.checkMany(tenantId, [input], { throwItemErrors: true });
    return result!.allowed;
  }

  async checkBulk(tenantId: string, inputs: readonly CheckInput[]): Promise<BulkResult[]> {
    return this.checkMany(tenantId, inputs, { throwItemErrors: false });
  }

  private async checkMany(tenantId: string, inputs: readonly CheckInput[], { throwItemErrors }: { throwItemErrors: boolean }): Promise<BulkResult[]> {
    const queries = inputs.map(parseTriple);
    const schema = await this.schemaWith(tenantId, new Set(queries.map((q) => q.object.ns)));

    const results = new Array<BulkResult>(queries.length);
    const toEvaluate: number[] = [];
    const failItem = (index: number, error: DomainError) => {
      if (throwItemErrors) throw error;
      results[index] = { allowed: false, error: { type: error.type as BulkItemErrorType, detail: error.detail } };
    };
    queries.forEach((query, index) => {
      try {
        schema.assertRelation(query.object.ns, query.relation);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return failItem(index, error);
      }
      toEvaluate.push(index);
    });
    const evaluated =
      toEvaluate.length > 0
        ? await this.checker.check(
            tenantId,
            schema,
            toEvaluate.map((i) => queries[i]!),
          )
        : [];
    toEvaluate.forEach((queryIndex, answerIndex) => {
      const answer = evaluated[answerIndex]!;
      if (typeof answer === 'boolean') results[queryIndex] = { allowed: answer };
      else failItem(queryIndex, answer);
    });
    return results;
  }

  /** One page of the ids on which check(subject, relation, namespace:id) is true, ascending. */
  async listObjects(
    tenantId: string,
    query: { subject: string; namespace: string; relation: string; after: string | null; limit: number },
  ): Promise<{ ids: string[]; more: boolean }> {
    const subject = parseRef(query.subject, 'subject');
    const schema = await this.schemaWith(tenantId, [query.namespace]);
    schema.assertRelation(query.namespace, query.relation);
    const page = { subject, namespace: query.namespace, relation: query.relation, after: query.after, limit: query.limit + 1 };
    const ids =
      (await this.checker.reachable(tenantId, schema, { ...page, budget: this.listingBudget })) ??
      (await this.scanCandidates(tenantId, schema, page));
    return { ids: ids.slice(0, query.limit), more: ids.length > query.limit };
  }

  /**
   * A subject that reaches a lot: rather than walk everything it reaches, take the namespace's object
   * ids in order after the cursor and check them in batches until the page is full. The cost follows
   * the page and how densely the subject reaches. The batches checked so far measure that density: a
   * subject that reaches few of many objects (10,000 of 1,000,000 documents) would need thousands of
   * checks for a page, so once the checks still to come would cost more than the first walk was
   * allowed, it is walked after all (once), with a budget about as costly as those checks.
   */
  private async scanCandidates(tenantId: string, schema: CompiledSchema, page: Omit<ReachableQuery, 'budget'>): Promise<string[]> {
    const found: string[] = [];
    let after = page.after;
    let checked = 0;
    let walked = false;
    for (let batch = Math.min(page.limit, FIRST_CANDIDATE_BATCH); found.length < page.limit; batch = Math.min(batch * 2, MAX_CANDIDATE_BATCH)) {
      const candidates = await this.checker.objectIds(tenantId, page.namespace, after, batch);
      const allowed = await this.checker.check(
        tenantId,
        schema,
        candidates.map((id) => ({ subject: page.subject, relation: page.relation, object: { ns: page.namespace, id } })),
      );
      candidates.forEach((id, i) => {
        const answer = allowed[i]!;
        if (answer instanceof DomainError) throw answer;
        if (answer && found.length < page.limit) found.push(id);
      });
      if (candidates.length < batch) break;
      after = candidates.at(-1)!;
      checked += candidates.length;
      const checksLeft = found.length > 0 ? ((page.limit - found.length) * checked) / found.length : Infinity;
      const pairsPerCheck = this.checker.pairsPerCheck(tenantId);
      if (!walked && this.maxListingBudget > this.listingBudget && checksLeft * pairsPerCheck > this.listingBudget) {
        // At least twice the first walk: it reached further than that, and ids cluster, so the
        // density seen so far may flatter the scan.
        walked = true;
        const budget = Math.floor(Math.min(this.maxListingBudget, Math.max(checksLeft * pairsPerCheck, 2 * this.listingBudget)));
        const ids = await this.checker.reachable(tenantId, schema, { ...page, budget });
        if (ids) return ids;
      }
    }
    return found;
  }
}

const parseTriple = (input: CheckInput): Triple => ({
  subject: parseRef(input.subject, 'subject'),
  relation: input.relation,
  object: parseRef(input.object, 'object'),
});

/** The first batch of candidates: enough for a page of 100 from a subject that reaches densely. */
const FIRST_CANDIDATE_BATCH = 128;
/** The most candidates checked in one statement while paging through a namespace. */
const MAX_CANDIDATE_BATCH = 1000;

/** How long a namespace found absent is taken to be absent (well within the freshness bound). */
const ABSENT_RECHECK_MS = 100;
