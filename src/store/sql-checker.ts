import { DEFAULT_CHECK_BUDGET, overBudget } from '../engine/budget.ts';
import type { CheckAnswer, CheckResolver, CheckResponse } from '../engine/checker.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import { AGENT_NAMESPACE, type Ref, type Triple } from '../engine/refs.ts';
import type { CompiledSchema } from '../engine/schema.ts';
import { MAX_ARROW_DEPTH } from '../engine/schema-tables.ts';
import { decideRules, type PlainAnswer, type RuledAnswer, type RuleGraph, UNDECIDED } from '../engine/rule-check.ts';
import { masksAdmit } from '../engine/scope.ts';
import { RetryLater } from '../errors.ts';
import { isCancelled } from './errors.ts';
import { CHECK_SQL, type CheckOutcome, RELATED_SQL } from './graph-sql.ts';
import type { GraphStatements } from './graph-statements.ts';
import { TenantBatches } from './tenant-batches.ts';

/**
 * Answers checks from PostgreSQL. Checks asked during one turn of the event loop go to the
 * database together, one statement per tenant (TenantBatches): under load, the round trip, not the
 * graph walk, is what a check costs. A check's walk is the PL/pgSQL function grantd_check_walk
 * (CHECK_SQL) over the grants joined against the tenant's compiled namespace tables (passed as
 * JSON). Each statement reads an agent subject's scope beside the grants it walks, so that a mask
 * and the grants it masks come from one state of the tenant. Listings and explanations are
 * SqlListings'.
 *
 * The statements go to a pg pool of their own (openGraphPool) directly, as named prepared
 * statements: measured here, Prisma spends about 1 ms of CPU per raw query (1.1 ms for SELECT $1
 * against 0.2 ms on the pool), which alone would cap a node near 900 checks a second. They run
 * through GraphStatements: a tenant's at most a share of the pool at once, their time counted
 * against its share of the process's time on checks (CheckTimeShares). Every statement takes one
 * instant of `clock`, the server's, at which each grant is in force or not.
 */
export class SqlChecker implements CheckResolver {
  // Outcomes, not answers: DataLoader would take an Error value (a check refused for its budget) for a failed load.
  // A batch waits open while the tenant's share of the pool is busy: the checks asked meanwhile join it.
  private readonly batches = new TenantBatches<BatchedCheck, SqlOutcome>(
    (tenantId, items) => this.checkBatch(tenantId, items),
    (tenantId) => this.statements.whenFree(tenantId),
  );
  /** The most steps one check may take (GRANTD_CHECK_BUDGET), and how long it may walk in the database. */
  private readonly checkBudget: number;
  private readonly walkMs: number;
  private readonly clock: WallClock;

  constructor(
    /** Every statement of this checker: timed, and a tenant's limited to a share of the pool. */
    private readonly statements: GraphStatements,
    {
      checkBudget = DEFAULT_CHECK_BUDGET,
      walkMs = CHECK_WALK_MS,
      clock = SYSTEM_CLOCK,
    }: { checkBudget?: number | undefined; walkMs?: number; clock?: WallClock } = {},
  ) {
    this.clock = clock;
    this.checkBudget = checkBudget;
    this.walkMs = walkMs;
  }

  /**
   * Each query's answer, its statement shared with the checks of other requests of this turn, and
   * until when (epoch ms) they hold at the least: the tenant's next window boundary, when a grant's
   * window opens or closes (Infinity: none).
   */
  async check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckResponse> {
    if (schema.rules.any && queries.some((q) => schema.rules.of(q.object.ns, q.relation) !== undefined)) {
      return this.checkWithRules(tenantId, schema, queries);
    }
    const outcomes = await this.batches.load(
      tenantId,
      queries.map((query) => ({ schema, query, maxDepth: MAX_ARROW_DEPTH, decide: false })),
    );
    return {
      answers: queries.map((query, i) => this.answerOf(query, outcomes[i]!)),
      until: outcomes.reduce((until, o) => Math.min(until, o.until ?? Infinity), Infinity),
    };
  }

  /**
   * `check` where some query's relation has rules: those by the rule evaluator, their steps counted.
   * Its answers say nothing of when they change, so none is kept by the answer cache (no `until`).
   * An agent's scope comes with a walk of the query itself, in the same statement as the checks of the turn.
   */
  private async checkWithRules(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckResponse> {
    let ruledSteps = 0;
    const answers = await Promise.all(
      queries.map(async (query) => {
        const ruled = schema.rules.of(query.object.ns, query.relation) !== undefined;
        const walk =
          !ruled || query.subject.ns === AGENT_NAMESPACE
            ? this.batches.load(tenantId, [{ schema, query, maxDepth: MAX_ARROW_DEPTH, decide: false }])
            : null;
        const [outcomes, decided] = await Promise.all([walk, ruled ? this.decide(tenantId, schema, query) : null]);
        const outcome = outcomes?.[0];
        if (!ruled) return this.answerOf(query, outcome!);
        ruledSteps += decided!.steps;
        return outcome === undefined || masksAdmit(query.subject, query.object.ns, query.relation, () => outcome.scope) ? decided!.answer : false;
      }),
    );
    return { answers, ruledSteps };
  }

  /** A ruled query's answer by the rule evaluator, its plain walks batched with the turn's checks (no agent mask). */
  private decide(tenantId: string, schema: CompiledSchema, query: Triple): Promise<RuledAnswer> {
    const graph: RuleGraph = {
      plain: async (queries, maxDepth, _budget, decide) => ({
        answers: await this.plainCheck(tenantId, schema, queries, maxDepth, decide),
        steps: queries.length * PLAIN_WALK_STEPS,
      }),
      related: async (object, via, limit) => {
        const related = await this.related(tenantId, object, via, limit + 1);
        return related.length > limit ? null : related;
      },
    };
    return decideRules(graph, schema, query, this.checkBudget);
  }

  /**
   * The walk of `check` for a part of a rule (src/engine/rule-check.ts): by the subject's grants
   * alone, an agent's registration and scope being the caller's to apply once, at the top; following
   * at most `maxDepth` arrows. Batched with the checks of the turn.
   */
  async plainCheck(tenantId: string, schema: CompiledSchema, queries: readonly Triple[], maxDepth: number, decide = false): Promise<PlainAnswer[]> {
    if (!Number.isInteger(maxDepth) || maxDepth < 0 || maxDepth > MAX_ARROW_DEPTH) {
      throw new RangeError(`maxDepth ${maxDepth} is not an arrow depth (0 to ${MAX_ARROW_DEPTH})`);
    }
    const outcomes = await this.batches.load(
      tenantId,
      queries.map((query) => ({ schema, query, maxDepth, decide })),
    );
    return outcomes.map((outcome) => (outcome.outcome === 'too-deep' ? UNDECIDED : this.graphAnswerOf(outcome)));
  }

  /**
   * The subjects X of grants (X, `via`, `object`) in force now, ordered by (namespace, id), at most
   * `limit` (a caller that gets `limit` of them takes it as past its budget).
   */
  async related(tenantId: string, object: Ref, via: string, limit: number): Promise<Ref[]> {
    const { rows } = await this.statements.query<Ref>(tenantId, {
      name: 'grantd_related',
      text: RELATED_SQL,
      values: [tenantId, object.ns, object.id, via, new Date(this.clock.now()), limit],
    });
    return rows.map(({ ns, id }) => ({ ns, id }));
  }

  /**
   * One statement per (schema, depth, whether decided) among the items (a batch normally holds one:
   * the tenant's latest schema, every arrow).
   */
  private async checkBatch(tenantId: string, items: readonly BatchedCheck[]): Promise<SqlOutcome[]> {
    const walks = new Map<string, { schema: CompiledSchema; maxDepth: number; decide: boolean; indexes: number[] }>();
    const schemaNumbers = new Map<CompiledSchema, number>();
    items.forEach(({ schema, maxDepth, decide }, index) => {
      if (!schemaNumbers.has(schema)) schemaNumbers.set(schema, schemaNumbers.size);
      const key = `${schemaNumbers.get(schema)} ${maxDepth} ${decide}`;
      const walk = walks.get(key);
      if (walk) walk.indexes.push(index);
      else walks.set(key, { schema, maxDepth, decide, indexes: [index] });
    });
    const outcomes: SqlOutcome[] = items.map(() => ({ outcome: 'denied', scope: null, until: null }));
    const at = new Date(this.clock.now());
    await Promise.all(
      [...walks.values()].map(async ({ schema, maxDepth, decide, indexes }) => {
        const batch = JSON.stringify(
          indexes.map((i) => {
            const q = items[i]!.query;
            return { i, sns: q.subject.ns, sid: q.subject.id, ons: q.object.ns, oid: q.object.id, rel: q.relation };
          }),
        );
        try {
          const { rows } = await this.statements.query<{ i: number; outcome: CheckOutcome | null; scope: string[] | null; until: number | null }>(
            tenantId,
            {
              name: 'grantd_check',
              text: CHECK_SQL,
              values: [tenantId, batch, schema.closureJson, schema.arrowsJson, this.checkBudget, this.walkMs, at, maxDepth, decide],
            },
          );
          for (const { i, outcome, scope, until } of rows) outcomes[i] = { outcome: outcome ?? 'denied', scope, until };
        } catch (error) {
          if (!isCancelled(error)) throw error;
          for (const i of indexes) outcomes[i] = { outcome: 'cancelled', scope: null, until: null };
        }
      }),
    );
    return outcomes;
  }

  /**
   * A mask that refuses answers even a check the graph could not. A check past its work budget is
   * check-too-complex, that check's answer; one that ran out of time is the database's moment, not
   * the check's, and the request is refused for now (503, retried by clients) rather than told to
   * simplify its model.
   */
  private answerOf(query: Triple, outcome: SqlOutcome): CheckAnswer {
    if (outcome.outcome !== 'cancelled' && !masksAdmit(query.subject, query.object.ns, query.relation, () => outcome.scope)) return false;
    return this.graphAnswerOf(outcome);
  }

  /** What the walk alone says, whatever an agent's scope. */
  private graphAnswerOf({ outcome }: SqlOutcome): CheckAnswer {
    if (outcome === 'cancelled') {
      throw new RetryLater(
        `a check was not answered within ${this.statements.statementTimeoutMs / 1000} s; retry shortly`,
        'check statement cancelled',
      );
    }
    switch (outcome) {
      case 'allowed':
        return true;
      case 'denied':
        return false;
      case 'too-many-steps':
        return overBudget(this.checkBudget);
      case 'too-slow':
        throw new RetryLater(`a check was still walking after ${this.walkMs / 1000} s; retry shortly`, 'check walk too slow');
      case 'too-deep':
        throw new Error('a check walk reported too-deep without being asked to decide');
    }
  }
}

/**
 * A check still walking after this long stops at its next depth, and its request is 503 unavailable
 * (answerOf), so that it does not hold its statement (and the checks batched with it) up to the
 * statement's time limit.
 */
export const CHECK_WALK_MS = 1_000;

/** A check waiting for its turn's statement: its schema tables and how many arrows its walk follows. */
interface BatchedCheck {
  schema: CompiledSchema;
  query: Triple;
  maxDepth: number;
  /** A part of a rule that must be decided within maxDepth arrows (RuleGraph.plain). */
  decide: boolean;
}

/** What the database says of a check; 'cancelled': its statement ran out of time. */
interface SqlOutcome {
  outcome: CheckOutcome | 'denied' | 'cancelled';
  scope: string[] | null;
  /** The tenant's next window boundary (epoch ms) after the statement's instant; null: none. */
  until: number | null;
}
/**
 * What a plain walk in PostgreSQL is charged in a ruled check's budget (its own steps are not
 * reported): about what a walk of a few levels costs in memory, so that a rule fanning out to
 * thousands of walks is refused as too complex, as it would be in memory.
 */
const PLAIN_WALK_STEPS = 20;
