import { isCheckTooComplex, overBudget } from './budget.ts';
import type { CheckAnswer } from './checker.ts';
import type { RuleReference } from './model-rules.ts';
import { formatRef, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { MAX_ARROW_DEPTH } from './schema-tables.ts';

/**
 * What the rule evaluator reads of one tenant, from one state of it: the plain walk (what grants
 * confer under the schema's tables, the subject's groups and its namespace's `*` included, no agent
 * mask) and the objects an arrow leads to.
 */
export interface RuleGraph {
  /**
   * The plain walk's answer for each query, following at most `maxDepth` arrows, and the steps it
   * took in all (charged to the check). A query past `budget` steps answers its problem.
   */
  plain(queries: readonly Triple[], maxDepth: number, budget: number): Promise<{ answers: CheckAnswer[]; steps: number }>;
  /** The X of the grants (X, via, object) in force; null when there are more than `limit` (the check is past its budget). */
  related(object: Ref, via: string, limit: number): Promise<Ref[] | null>;
}

/**
 * allowed(S, R, O) for a relation with rules (docs/model.md#what-a-check-means): its base (its own
 * grants and plain includes by the plain walk, then its other includes), then each of `requires`,
 * then none of `excludes`, each reference evaluated for the subject as a whole, arrows at most
 * MAX_ARROW_DEPTH in a chain from the checked object. A plain relation is asked of the plain walk.
 * Every part is charged to one budget: past it, the check-too-complex problem, never a guess. No
 * agent mask: the caller applies the subject's once, to the checked relation.
 */
export async function decideRules(graph: RuleGraph, schema: CompiledSchema, query: Triple, budget: number): Promise<CheckAnswer> {
  try {
    return await new RuleEvaluation(graph, schema, query.subject, budget).allowed(query.relation, query.object, 0);
  } catch (error) {
    // A part's walk is given what is left of the budget and names that: the problem names the check's.
    if (isCheckTooComplex(error)) return overBudget(budget);
    throw error;
  }
}

class RuleEvaluation {
  private steps = 0;
  /** Answers by depth, relation and object: the same part asked again within one check is evaluated once. */
  private readonly known = new Map<string, boolean>();

  constructor(
    private readonly graph: RuleGraph,
    private readonly schema: CompiledSchema,
    private readonly subject: Ref,
    private readonly budget: number,
  ) {}

  async allowed(relation: string, object: Ref, depth: number): Promise<boolean> {
    const key = `${depth} ${relation} ${formatRef(object)}`;
    const known = this.known.get(key);
    if (known !== undefined) return known;
    const answer = await this.evaluate(relation, object, depth);
    this.known.set(key, answer);
    return answer;
  }

  private async evaluate(relation: string, object: Ref, depth: number): Promise<boolean> {
    this.charge(1);
    const [base] = await this.plain(relation, [object], depth);
    const rules = this.schema.rules.of(object.ns, relation);
    if (rules === undefined) return base!;
    if (!base && !(await this.any(rules.includes, object, depth))) return false;
    for (const required of rules.requires) if (!(await this.reference(required, object, depth))) return false;
    for (const excluded of rules.excludes) if (await this.reference(excluded, object, depth)) return false;
    return true;
  }

  private async any(references: readonly RuleReference[], object: Ref, depth: number): Promise<boolean> {
    for (const reference of references) if (await this.reference(reference, object, depth)) return true;
    return false;
  }

  /** ref(S, reference, object): the same object's relation, or the relation on some X an arrow leads to. */
  private async reference(reference: RuleReference, object: Ref, depth: number): Promise<boolean> {
    if (reference.kind === 'same') return this.allowed(reference.relation, object, depth);
    if (depth === MAX_ARROW_DEPTH) return false;
    const related = await this.graph.related(object, reference.via, this.budget - this.steps);
    if (related === null) throw overBudget(this.budget);
    this.charge(related.length);
    if (related.length === 0) return false;
    // Plain in every namespace: one walk for all of them (one statement in PostgreSQL).
    if (this.schema.rules.isPlainReference(object.ns, reference)) return (await this.plain(reference.relation, related, depth + 1)).some(Boolean);
    for (const next of related) if (await this.allowed(reference.relation, next, depth + 1)) return true;
    return false;
  }

  /** The plain walk's answers for the relation on each object, `depth` arrows down the chain. */
  private async plain(relation: string, objects: readonly Ref[], depth: number): Promise<boolean[]> {
    const queries = objects.map((object) => ({ subject: this.subject, relation, object }));
    const { answers, steps } = await this.graph.plain(queries, MAX_ARROW_DEPTH - depth, this.budget - this.steps);
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
