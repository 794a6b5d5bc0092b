import { overBudget, wholeBudgetProblem } from './budget.ts';
import { shortestPath, stepsOf, type ExplainGraph, type PathStep, type WindowedGrant } from './explain-walk.ts';
import type { Explanation } from './explanation.ts';
import type { RuleReference } from './model-rules.ts';
import { formatRef, type Ref, type Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { MAX_ARROW_DEPTH } from './schema-tables.ts';

/**
 * Explains a check of a relation with rules (docs/model.md#explain), once its base holds:
 * `excluded` with a shortest chain to the first exclusion the subject holds, else
 * `requirement-not-met` naming the first reference it lacks, else allowed with a shortest chain for
 * the base and one for each requirement. Null when the base does not hold (the caller gives the
 * plain reasons). Decides as decideRules does, walking each part with explain's walk (shortestPath)
 * over the grants `counts` lets through, all against one budget.
 */
export async function explainRules(
  graph: ExplainGraph,
  schema: CompiledSchema,
  query: Triple,
  budget: number,
  counts: (grant: WindowedGrant) => boolean,
): Promise<Explanation | null> {
  try {
    return await explainWithin(graph, schema, query, budget, counts);
  } catch (error) {
    throw wholeBudgetProblem(error, budget);
  }
}

async function explainWithin(
  graph: ExplainGraph,
  schema: CompiledSchema,
  query: Triple,
  budget: number,
  counts: (grant: WindowedGrant) => boolean,
): Promise<Explanation | null> {
  const chains = new RuleChains(graph, schema, query.subject, budget, counts);
  const base = await chains.base(query.relation, query.object, 0);
  if (base === null) return null;
  const rules = schema.rules.of(query.object.ns, query.relation)!;
  for (const excluded of rules.excludes) {
    const chain = await chains.reference(excluded, query.object, 0);
    if (chain !== null) return { allowed: false, path: stepsOf(chain), reason: 'excluded', detail: excluded.text };
  }
  const requirements: NonNullable<Explanation['requirements']> = [];
  for (const required of rules.requires) {
    const chain = await chains.reference(required, query.object, 0);
    if (chain === null) return { allowed: false, path: [], reason: 'requirement-not-met', detail: required.text };
    requirements.push({ reference: required.text, path: stepsOf(chain) });
  }
  return { allowed: true, path: stepsOf(base), reason: null, ...(requirements.length > 0 ? { requirements } : {}) };
}

type Chain = PathStep[];

/** Shortest chains of grants by which the subject holds each part of a ruled check, or null where it does not. */
class RuleChains {
  private steps = 0;
  private readonly known = new Map<string, Chain | null>();

  constructor(
    private readonly graph: ExplainGraph,
    private readonly schema: CompiledSchema,
    private readonly subject: Ref,
    private readonly budget: number,
    private readonly counts: (grant: WindowedGrant) => boolean,
  ) {}

  /** allowed(S, relation, object): the base's chain when every requirement holds and no exclusion does. */
  async allowed(relation: string, object: Ref, depth: number): Promise<Chain | null> {
    const key = `${depth} ${relation} ${formatRef(object)}`;
    if (this.known.has(key)) return this.known.get(key)!;
    let chain = await this.base(relation, object, depth);
    const rules = this.schema.rules.of(object.ns, relation);
    if (chain !== null && rules !== undefined) {
      for (const required of rules.requires) if (chain !== null && (await this.reference(required, object, depth)) === null) chain = null;
      for (const excluded of rules.excludes) if (chain !== null && (await this.reference(excluded, object, depth)) !== null) chain = null;
    }
    this.known.set(key, chain);
    return chain;
  }

  /** base(S, relation, object): the shortest of the plain walk's chain and those of the includes with rules. */
  async base(relation: string, object: Ref, depth: number): Promise<Chain | null> {
    const walked = await shortestPath(
      this.graph,
      this.schema,
      { subject: this.subject, relation, object },
      this.budget - this.steps,
      this.counts,
      MAX_ARROW_DEPTH - depth,
    );
    this.charge(walked.steps + 1);
    let best = walked.path;
    for (const include of this.schema.rules.of(object.ns, relation)?.includes ?? [])
      best = shorter(best, await this.reference(include, object, depth));
    return best;
  }

  /** ref(S, reference, object): the same object's relation, or the relation on the X of an arrow, the arrow's grant last. */
  async reference(reference: RuleReference, object: Ref, depth: number): Promise<Chain | null> {
    if (reference.kind === 'same') return this.allowed(reference.relation, object, depth);
    if (depth === MAX_ARROW_DEPTH) return null;
    const related = (await this.graph.related([{ object, via: reference.via }], this.budget - this.steps + 1)).filter(this.counts);
    this.charge(related.length);
    let best: Chain | null = null;
    for (const grant of related) {
      const chain = await this.allowed(reference.relation, grant.subject, depth + 1);
      if (chain !== null) best = shorter(best, [...chain, { grant, via: `arrow:${reference.via}->${reference.relation}` }]);
    }
    return best;
  }

  private charge(steps: number): void {
    this.steps += steps;
    if (this.steps > this.budget) throw overBudget(this.budget);
  }
}

const shorter = (a: Chain | null, b: Chain | null): Chain | null => (a === null ? b : b === null || a.length <= b.length ? a : b);
