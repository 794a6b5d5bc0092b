import { DEFAULT_CHECK_BUDGET, isCheckTooComplex } from './budget.ts';
import type { CheckAnswer, CheckResponse, HoldersQuery, ReachableQuery } from './checker.ts';
import { explainCheck, indexGraph } from './explain.ts';
import type { Explanation } from './explanation.ts';
import type { GrantIndex } from './grant-index.ts';
import type { Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { RuleDecision, type PlainAnswer, type SyncRuleGraph } from './rule-check.ts';
import { masksAdmit } from './scope.ts';
import { SLICE_MS, WorkMeter, type Slice } from './work-meter.ts';

/** A tenant's grants in memory: their index, and its agents' scopes by external id. */
export interface IndexedTenant {
  readonly index: GrantIndex;
  readonly agents: ReadonlyMap<string, readonly string[]>;
}

/**
 * Checks, listing walks and explanations of a tenant held in a GrantIndex, with the work budget and
 * the agent masks applied, each read from one state of the tenant (a mask is asked right before its
 * walk). The one composition of the index: the server's held tenants (MemoryChecker, which runs
 * every call under the work meter, in the tenant's slices) and `grantd test` (src/cli/model-test.ts,
 * unmetered) both answer through it.
 */
export class IndexChecker {
  /**
   * Measured here: in memory, a walked pair about 0.2 us and a candidate about 4.5 (its id read
   * from the database ~1.3 us, the check about 3), so a check costs about 20 pairs.
   */
  readonly pairsPerCheck = 20;
  /**
   * A listing walk here goes 2.5 times as far as the engine's budgets say (25,000 pairs for the first
   * walk): a pair costs about 0.1 us, so a walk that far takes a few milliseconds, less than what it
   * saves when it succeeds (a round trip for candidates, their checks and a second walk), and a
   * subject reaching 10,000-20,000 objects is listed by one walk.
   */
  readonly walkScale = 2.5;

  constructor(
    /** The most steps one check may take (GRANTD_CHECK_BUDGET). */
    private readonly checkBudget = DEFAULT_CHECK_BUDGET,
  ) {}

  /**
   * Each query's answer (GrantIndex.checkAll), giving way at the slice's checkpoints; a query of a
   * relation with rules is decided by the rule evaluator over the index (RuleDecision), giving way
   * between its reads, and its steps are counted (`ruledSteps`).
   */
  async check(tenant: IndexedTenant, schema: CompiledSchema, queries: readonly Triple[], slice?: Slice): Promise<CheckResponse> {
    const admits = this.admitsOf(tenant);
    const isRuled = schema.rules.any ? queries.map((q) => isRuledQuery(schema, q)) : [];
    if (!isRuled.includes(true)) return { answers: await tenant.index.checkAll(schema, queries, this.checkBudget, { admits, slice }) };
    const plainAnswers = await tenant.index.checkAll(
      schema,
      queries.filter((_, i) => !isRuled[i]),
      this.checkBudget,
      { admits, slice },
    );
    const answers = new Array<CheckAnswer>(queries.length);
    const ruled = { steps: 0 };
    let nextPlain = 0;
    for (let i = 0; i < queries.length; i++) {
      if (!isRuled[i]) {
        answers[i] = plainAnswers[nextPlain++]!;
        continue;
      }
      if (slice?.due()) await slice.pause();
      answers[i] = await this.decideInSlices(tenant, schema, queries[i]!, ruled, slice);
    }
    return { answers, ruledSteps: ruled.steps };
  }

  /**
   * One query's answer, as `check` gives it for [query], with no promise; undefined when it has
   * rules and deciding them takes longer than a slice (then `check`, which gives way between reads).
   */
  checkOne(tenant: IndexedTenant, schema: CompiledSchema, query: Triple): CheckAnswer | undefined {
    if (isRuledQuery(schema, query)) {
      const deadline = performance.now() + SLICE_MS;
      const answer = new RuleDecision(indexRuleGraph(tenant.index, schema), schema, query, this.checkBudget).run(() => performance.now() >= deadline);
      return answer === undefined ? undefined : this.admitsOf(tenant)(query) && answer;
    }
    if (!this.admitsOf(tenant)(query)) return false;
    try {
      return tenant.index.check(schema, query, this.checkBudget);
    } catch (error) {
      if (!isCheckTooComplex(error)) throw error;
      return error;
    }
  }

  /**
   * A ruled query's answer, its reads in the slice's time, giving way between them when it is spent;
   * its steps (of every try) added to `ruled`. Grants that changed meanwhile start it again (the
   * answer is one state's); after RULED_TRIES it is decided in one unit, as its budget bounds. The
   * agent's mask is asked after the last read, in the same turn: grants unchanged since the first
   * read are that turn's.
   */
  private async decideInSlices(
    tenant: IndexedTenant,
    schema: CompiledSchema,
    query: Triple,
    ruled: { steps: number },
    slice?: Slice,
  ): Promise<CheckAnswer> {
    for (let tries = 1; ; tries++) {
      const version = tenant.index.version;
      const decision = new RuleDecision(indexRuleGraph(tenant.index, schema), schema, query, this.checkBudget);
      const due = slice && tries < RULED_TRIES ? () => slice.due() : () => false;
      let answer = decision.run(due);
      while (answer === undefined && tenant.index.version === version) {
        await slice!.pause();
        if (tenant.index.version === version) answer = decision.run(due);
      }
      ruled.steps += decision.steps;
      if (answer !== undefined) return this.admitsOf(tenant)(query) && answer;
    }
  }

  /** Whether the agents' masks let a query's subject hold its relation (docs/model.md: an agent's scope). */
  private admitsOf(tenant: IndexedTenant): (query: Triple) => boolean {
    return (q) => masksAdmit(q.subject, q.object.ns, q.relation, (id) => tenant.agents.get(id));
  }

  /**
   * The listing walk's ids (null past its budget: ListingWalks.reachable), the namespace's ids ranked
   * first in the slice's units; null when the grants changed while they were ranked.
   */
  async reachable(tenant: IndexedTenant, schema: CompiledSchema, query: ReachableQuery, slice?: Slice): Promise<{ ids: string[] | null } | null> {
    if (!masksAdmit(query.subject, query.namespace, query.relation, (id) => tenant.agents.get(id))) return { ids: [] };
    if (!(await tenant.index.rankInSlices(query.namespace, slice ?? WorkMeter.unmetered()))) return null;
    return { ids: tenant.index.reachable(schema, query) };
  }

  /** The listing walk from an object (ListingWalks.holders), or null as for `reachable`. */
  async holders(tenant: IndexedTenant, schema: CompiledSchema, query: HoldersQuery, slice?: Slice): Promise<{ ids: string[] | null } | null> {
    if (!(await tenant.index.rankInSlices(query.namespace, slice ?? WorkMeter.unmetered()))) return null;
    const admits = (id: string) => masksAdmit({ ns: query.namespace, id }, query.object.ns, query.relation, (agent) => tenant.agents.get(agent));
    return { ids: tenant.index.holders(schema, query, admits) };
  }

  /**
   * Why the check is allowed or denied at `now` (epoch ms), giving way between pairs; IndexChanged
   * when the grants changed meanwhile.
   */
  explain(tenant: IndexedTenant, schema: CompiledSchema, query: Triple, now: number, slice?: Slice): Promise<Explanation> {
    return explainCheck(
      indexGraph(tenant.index, (id) => tenant.agents.get(id), slice),
      schema,
      query,
      this.checkBudget,
      now,
    );
  }
}

/** How often a ruled check starts again when the grants change while it gives way, before it is decided in one unit. */
const RULED_TRIES = 3;

/** The rule evaluator's reads of an index: the plain walk with its steps, and an arrow's related objects, answered at once. */
export function indexRuleGraph(index: GrantIndex, schema: CompiledSchema): SyncRuleGraph {
  return {
    plain: (queries, maxDepth, budget, decide) => {
      let steps = 0;
      const answers: PlainAnswer[] = [];
      for (const query of queries) {
        try {
          answers.push(index.checkPlain(schema, query, budget - steps, maxDepth, decide));
          steps += index.lastCheckSteps;
        } catch (error) {
          if (!isCheckTooComplex(error)) throw error;
          answers.push(error);
          break;
        }
      }
      return { answers, steps };
    },
    related: (object, via, limit) => index.relatedTo(object, via, limit),
  };
}

/** Whether a query's relation has rules (decided by the rule evaluator rather than the plain walk). */
function isRuledQuery(schema: CompiledSchema, query: Triple): boolean {
  return schema.rules.any && schema.rules.of(query.object.ns, query.relation) !== undefined;
}
