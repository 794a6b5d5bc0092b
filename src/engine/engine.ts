import type { z } from 'zod';
import type { BulkCheckResultSchema } from '../../contract/check.ts';
import { DomainError } from '../errors.ts';
import type { Checker } from './checker.ts';
import type { Explanation } from './explanation.ts';
import { parseRef, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { ListingPages, type ListingBudgets, type Page } from './listing-pages.ts';

export interface CheckInput {
  subject: string;
  relation: string;
  object: string;
}

/** The field of a triple each problem of its parsing and validation is about. */
const FIELD_OF_PROBLEM: Partial<Record<DomainError['type'], keyof CheckInput>> = {
  'invalid-subject': 'subject',
  'invalid-object': 'object',
  'namespace-not-found': 'object',
  'unknown-relation': 'relation',
};

/** Runs `parse` on item `index` of `list`; its problem names the item's field (docs/errors.md#problems-of-a-batch). */
function atItem<T>(list: string | undefined, index: number, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const field = error instanceof DomainError ? FIELD_OF_PROBLEM[error.type] : undefined;
    if (list === undefined || field === undefined) throw error;
    throw (error as DomainError).at(`${list}[${index}].${field}`);
  }
}

export type BulkResult = z.infer<typeof BulkCheckResultSchema>['results'][number];
type BulkItemErrorType = NonNullable<BulkResult['error']>['type'];

/** The result of a bulk's check that was answered: made once, as the single check's bodies are. */
const ALLOWED_ITEM: BulkResult = Object.freeze({ allowed: true });
const DENIED_ITEM: BulkResult = Object.freeze({ allowed: false });
const failedItem = (error: DomainError): BulkResult => ({ allowed: false, error: { type: error.type as BulkItemErrorType, detail: error.detail } });

/**
 * The authorization graph: docs/model.md#what-a-check-means. Validation and the choice of queries
 * live here; the graph walk and the agent scope masks, read from one state of the tenant, are the Checker's (checker.ts).
 */
export class AuthorizationEngine {
  private readonly pages: ListingPages;

  constructor(
    readonly checker: Checker,
    /** How much a listing walks forwards from a subject before it looks at candidates instead, and the most it walks once candidates have shown the subject to be sparse in the namespace. */
    { listingBudget = 10_000, maxListingBudget = 200_000 }: Partial<ListingBudgets> = {},
  ) {
    this.pages = new ListingPages(checker, { listingBudget, maxListingBudget });
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
    const schema = await this.checker.schemas.get(tenantId);
    for (const ns of namespaces) {
      if (!schema.namespace(ns)) return this.checker.schemas.get(tenantId, { maxAgeMs: ABSENT_RECHECK_MS });
    }
    return schema;
  }

  /**
   * Parses triples (grants to write or delete); with `validate`, also requires each object's
   * namespace and relation to exist. Given the name of the request's list, a problem names the item
   * (`writes[3].object`).
   */
  async parseTriples(tenantId: string, inputs: readonly CheckInput[], validate: boolean, list?: string): Promise<Triple[]> {
    const triples = inputs.map((input, index) => atItem(list, index, () => parseTriple(input)));
    if (validate) {
      const schema = await this.schemaWith(
        tenantId,
        triples.map((t) => t.object.ns),
      );
      triples.forEach((t, index) => atItem(list, index, () => schema.assertRelation(t.object.ns, t.relation)));
    }
    return triples;
  }

  /**
   * One check, as checkBulk would answer it but throwing its problem: the hottest request, so it
   * makes no lists and, when the schema and the tenant's grants are at hand, awaits nothing
   * (docs/decisions.md#a-check-allocates-what-it-needs).
   */
  async check(tenantId: string, input: CheckInput): Promise<boolean> {
    const query = parseTriple(input);
    const ns = query.object.ns;
    const atHand = this.checker.schemas.getNow?.(tenantId);
    const schema = atHand?.namespace(ns) ? atHand : await this.schemaWith(tenantId, [ns]);
    schema.assertRelation(ns, query.relation);
    const answer =
      this.checker.checks.checkNow?.(tenantId, schema, query) ?? (await this.checker.checks.check(tenantId, schema, [query])).answers[0]!;
    if (answer instanceof DomainError) throw answer;
    return answer;
  }

  /**
   * `check`'s answer when the schema and the tenant's grants are at hand, with no promise made (a
   * promise awaited is garbage a check need not make: docs/decisions.md#a-check-allocates-what-it-needs);
   * undefined when it must wait (then `check`, which asks again). Throws `check`'s problems.
   */
  checkNow(tenantId: string, input: CheckInput): boolean | undefined {
    const query = parseTriple(input);
    const schema = this.checker.schemas.getNow?.(tenantId);
    if (!schema?.namespace(query.object.ns) || !this.checker.checks.checkNow) return undefined;
    schema.assertRelation(query.object.ns, query.relation);
    const answer = this.checker.checks.checkNow(tenantId, schema, query);
    if (answer instanceof DomainError) throw answer;
    return answer;
  }

  /**
   * Each check's answer, in order; a check naming an unknown namespace or relation, or past its work
   * budget, gets allowed: false and its problem. The answers of the checks evaluated are the two
   * shared results, not an object each (docs/decisions.md#a-check-allocates-what-it-needs).
   */
  async checkBulk(tenantId: string, inputs: readonly CheckInput[]): Promise<BulkResult[]> {
    const queries = inputs.map(parseTriple);
    const atHand = this.checker.schemas.getNow?.(tenantId);
    const schema =
      atHand && queries.every((q) => atHand.namespace(q.object.ns) !== undefined)
        ? atHand
        : await this.schemaWith(tenantId, new Set(queries.map((q) => q.object.ns)));

    const results = new Array<BulkResult>(queries.length);
    const toEvaluate: number[] = [];
    queries.forEach((query, index) => {
      try {
        schema.assertRelation(query.object.ns, query.relation);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        results[index] = failedItem(error);
        return;
      }
      toEvaluate.push(index);
    });
    const asked = toEvaluate.length === queries.length ? queries : toEvaluate.map((i) => queries[i]!);
    const evaluated = asked.length > 0 ? (await this.checker.checks.check(tenantId, schema, asked)).answers : [];
    toEvaluate.forEach((queryIndex, answerIndex) => {
      const answer = evaluated[answerIndex]!;
      results[queryIndex] = answer === true ? ALLOWED_ITEM : answer === false ? DENIED_ITEM : failedItem(answer);
    });
    return results;
  }

  /** One page of the ids on which check(subject, relation, namespace:id) is true, ascending. */
  async listObjects(
    tenantId: string,
    query: { subject: string; namespace: string; relation: string; after: string | null; limit: number },
  ): Promise<Page> {
    const subject = parseRef(query.subject, 'subject');
    const schema = await this.schemaWith(tenantId, [query.namespace]);
    schema.assertRelation(query.namespace, query.relation);
    const page = { subject, namespace: query.namespace, relation: query.relation, after: query.after, limit: query.limit + 1 };
    return this.pages.page(tenantId, schema, query.limit, {
      after: query.after,
      ruled: schema.rules.of(query.namespace, query.relation) !== undefined,
      walk: (budget) => this.checker.walks.reachable(tenantId, schema, { ...page, budget }),
      candidates: (after, limit) => this.checker.candidates.objectIds(tenantId, query.namespace, after, limit),
      queryOf: (id) => ({ subject, relation: query.relation, object: { ns: query.namespace, id } }),
    });
  }

  /**
   * One page of the ids of `subjectNamespace` subjects S for which check(S, relation, object) is
   * true, ascending: walked backwards from the object while that stays small, else candidates
   * checked in order, as objects are listed.
   */
  async listSubjects(
    tenantId: string,
    query: { object: string; relation: string; subjectNamespace: string; after: string | null; limit: number },
  ): Promise<Page> {
    const object = parseRef(query.object, 'object');
    const schema = await this.schemaWith(tenantId, [object.ns, query.subjectNamespace]);
    schema.assertRelation(object.ns, query.relation);
    if (!schema.namespace(query.subjectNamespace)) {
      const message = `namespace ${query.subjectNamespace} does not exist`;
      throw new DomainError('invalid-request', `query.subject_namespace: ${message}`, [{ path: 'query.subject_namespace', message }]);
    }
    const page = { object, relation: query.relation, namespace: query.subjectNamespace, after: query.after, limit: query.limit + 1 };
    return this.pages.page(tenantId, schema, query.limit, {
      after: query.after,
      ruled: schema.rules.of(object.ns, query.relation) !== undefined,
      walk: (budget) => this.checker.walks.holders(tenantId, schema, { ...page, budget }),
      candidates: (after, limit) => this.checker.candidates.subjectIds(tenantId, query.subjectNamespace, after, limit),
      queryOf: (id) => ({ subject: { ns: query.subjectNamespace, id }, relation: query.relation, object }),
    });
  }

  /** Why the check is allowed or denied: POST /v1/check/explain, validated as a check is. */
  async explain(tenantId: string, input: CheckInput): Promise<Explanation> {
    const query = parseTriple(input);
    const schema = await this.schemaWith(tenantId, [query.object.ns]);
    schema.assertRelation(query.object.ns, query.relation);
    if (schema.rules.of(query.object.ns, query.relation) !== undefined) {
      // Explain refuses what the check refuses: a rule's reference that 16 arrows do not decide
      // (docs/model.md#model-limits), which explain's shortest chains would not notice.
      const [answer] = (await this.checker.checks.check(tenantId, schema, [query])).answers;
      if (answer instanceof DomainError) throw answer;
    }
    return this.checker.explainer.explain(tenantId, schema, query);
  }
}

const parseTriple = (input: CheckInput): Triple => ({
  subject: parseRef(input.subject, 'subject'),
  relation: input.relation,
  object: parseRef(input.object, 'object'),
});

/** How long a namespace found absent is taken to be absent (well within the freshness bound). */
const ABSENT_RECHECK_MS = 100;
