import { overBudget, wholeBudgetProblem } from './budget.ts';
import type { CheckAnswer } from './checker.ts';
import type { RuleReference } from './model-rules.ts';
import { formatRef, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { MAX_ARROW_DEPTH } from './schema-tables.ts';

/** The plain walk's answers for some queries, and the steps it took in all (charged to the check). */
export interface PlainAnswers {
  answers: CheckAnswer[];
  steps: number;
}

/**
 * What the rule evaluator reads of one tenant, from one state of it: the plain walk (what grants
 * confer under the schema's tables, the subject's groups and its namespace's `*` included, no agent
 * mask) and the objects an arrow leads to. PostgreSQL's reads await; an index's answer at once
 * (SyncRuleGraph), so that a check in memory is decided with no promise.
 */
export interface RuleGraph {
  /** The plain walk's answer for each query, following at most `maxDepth` arrows; a query past `budget` steps answers its problem. */
  plain(queries: readonly Triple[], maxDepth: number, budget: number): Promise<PlainAnswers>;
  /** The X of the grants (X, via, object) in force; null when there are more than `limit` (the check is past its budget). */
  related(object: Ref, via: string, limit: number): Promise<Ref[] | null>;
}

/** A RuleGraph whose reads answer at once (an index's). */
export interface SyncRuleGraph {
  plain(queries: readonly Triple[], maxDepth: number, budget: number): PlainAnswers;
  related(object: Ref, via: string, limit: number): Ref[] | null;
}

/** A read the evaluation asks of its graph. */
type Read =
  { kind: 'plain'; queries: readonly Triple[]; maxDepth: number; budget: number } | { kind: 'related'; object: Ref; via: string; limit: number };
type Evaluation = Generator<Read, boolean, PlainAnswers | Ref[] | null>;

/**
 * allowed(S, R, O) for a relation with rules (docs/model.md#what-a-check-means): its base (its own
 * grants and plain includes by the plain walk, then its other includes), then each of `requires`,
 * then none of `excludes`, each reference evaluated for the subject as a whole, arrows at most
 * MAX_ARROW_DEPTH in a chain from the checked object. A plain relation is asked of the plain walk.
 * Every part is charged to one budget: past it, the check-too-complex problem, never a guess. No
 * agent mask: the caller applies the subject's once, to the checked relation.
 */
export async function decideRules(graph: RuleGraph, schema: CompiledSchema, query: Triple, budget: number): Promise<CheckAnswer> {
  const evaluation = new RuleEvaluation(schema, query.subject, budget).allowed(query.relation, query.object, 0);
  try {
    for (let step = evaluation.next(undefined as never); ;) {
      if (step.done) return step.value;
      const read = step.value;
      step = evaluation.next(
        read.kind === 'plain' ? await graph.plain(read.queries, read.maxDepth, read.budget) : await graph.related(read.object, read.via, read.limit),
      );
    }
  } catch (error) {
    return wholeBudgetProblem(error, budget);
  }
}

/** decideRules over reads that answer at once: the whole evaluation in one call, with no promise. */
export function decideRulesNow(graph: SyncRuleGraph, schema: CompiledSchema, query: Triple, budget: number): CheckAnswer {
  const evaluation = new RuleEvaluation(schema, query.subject, budget).allowed(query.relation, query.object, 0);
  try {
    for (let step = evaluation.next(undefined as never); ;) {
      if (step.done) return step.value;
      const read = step.value;
      step = evaluation.next(
        read.kind === 'plain' ? graph.plain(read.queries, read.maxDepth, read.budget) : graph.related(read.object, read.via, read.limit),
      );
    }
  } catch (error) {
    return wholeBudgetProblem(error, budget);
  }
}

/** One check's evaluation: generators that yield their reads, so that one evaluator serves both kinds of graph. */
class RuleEvaluation {
  private steps = 0;
  /** Answers by depth, relation and object: the same part asked again within one check is evaluated once. */
  private readonly known = new Map<string, boolean>();

  constructor(
    private readonly schema: CompiledSchema,
    private readonly subject: Ref,
    private readonly budget: number,
  ) {}

  *allowed(relation: string, object: Ref, depth: number): Evaluation {
    const key = `${depth} ${relation} ${formatRef(object)}`;
    const known = this.known.get(key);
    if (known !== undefined) return known;
    const answer = yield* this.evaluate(relation, object, depth);
    this.known.set(key, answer);
    return answer;
  }

  private *evaluate(relation: string, object: Ref, depth: number): Evaluation {
    this.charge(1);
    const base = (yield* this.plain(relation, [object], depth))[0]!;
    const rules = this.schema.rules.of(object.ns, relation);
    if (rules === undefined) return base;
    if (!base && !(yield* this.any(rules.includes, object, depth))) return false;
    for (const required of rules.requires) if (!(yield* this.reference(required, object, depth))) return false;
    for (const excluded of rules.excludes) if (yield* this.reference(excluded, object, depth)) return false;
    return true;
  }

  private *any(references: readonly RuleReference[], object: Ref, depth: number): Evaluation {
    for (const reference of references) if (yield* this.reference(reference, object, depth)) return true;
    return false;
  }

  /** ref(S, reference, object): the same object's relation, or the relation on some X an arrow leads to. */
  private *reference(reference: RuleReference, object: Ref, depth: number): Evaluation {
    if (reference.kind === 'same') return yield* this.allowed(reference.relation, object, depth);
    if (depth === MAX_ARROW_DEPTH) return false;
    const related = (yield { kind: 'related', object, via: reference.via, limit: this.budget - this.steps }) as Ref[] | null;
    if (related === null) throw overBudget(this.budget);
    this.charge(related.length);
    if (related.length === 0) return false;
    // Plain in every namespace: one walk for all of them (one statement in PostgreSQL).
    if (this.schema.rules.isPlainReference(object.ns, reference)) return (yield* this.plain(reference.relation, related, depth + 1)).some(Boolean);
    for (const next of related) if (yield* this.allowed(reference.relation, next, depth + 1)) return true;
    return false;
  }

  /** The plain walk's answers for the relation on each object, `depth` arrows down the chain. */
  private *plain(relation: string, objects: readonly Ref[], depth: number): Generator<Read, boolean[], PlainAnswers | Ref[] | null> {
    const queries = objects.map((object) => ({ subject: this.subject, relation, object }));
    const { answers, steps } = (yield {
      kind: 'plain',
      queries,
      maxDepth: MAX_ARROW_DEPTH - depth,
      budget: this.budget - this.steps,
    }) as PlainAnswers;
    this.charge(steps);
    return answers.map((answer) => {
      if (typeof answer !== 'boolean') throw answer;
      return answer;
    });
  }

  private charge(steps: number): void {
    this.steps += steps;
    if (this.steps > this.budget) throw overBudget(this.budget);
  }
}
